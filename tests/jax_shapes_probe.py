"""Under KERAS_BACKEND=jax (tests/test_compile_shapes.py in-process, tests/test_jax.py in a
subprocess): trains a small DSAN for two epochs on
pairs of SNLI's length distribution (docs/runs/snli25k_lengths.json) with the training
program's batches and compile-ahead, and prints, as JSON, the shapes an epoch used and
how often XLA compiled the training and evaluation steps before and during `fit`."""

import json
import logging
import pathlib
import sys

import jax
import numpy as np

from dsan_tf.experiment.config import DataConfig, ExperimentConfig, TrainingConfig, model_config
from dsan_tf.data.batching import (HYPOTHESIS_LENGTHS, PREMISE_LENGTHS, IdPairs,
                                   Shapes)
from dsan_tf.experiment.task import NLITask
from dsan_tf.training import compilation

PROFILE = pathlib.Path(__file__).parent.parent / "docs" / "runs" / "snli25k_lengths.json"


def snli_like_pairs(count, seed):
    return IdPairs.like_profile(json.loads(PROFILE.read_text()), count, seed)


class Compiles(logging.Handler):
    def __init__(self):
        super().__init__()
        self.counts = {"train_step": 0, "test_step": 0}

    def emit(self, record):
        message = record.getMessage()
        for name in self.counts:
            if f"Finished XLA compilation of jit({name})" in message:
                self.counts[name] += 1


def probe(pairs_count, premise_lengths=PREMISE_LENGTHS, hypothesis_lengths=HYPOTHESIS_LENGTHS):
    """What the module docstring says, as a dict."""
    config = ExperimentConfig(
        model_config=model_config("dsan", embedding_dim=16, num_heads=2, ffn_dim=32,
                                  classifier_units=16, vocab_size=200),
        data=DataConfig(batch_size=32, seed=0), training=TrainingConfig(jit_compile=True))
    task = NLITask(config)
    train, dev = snli_like_pairs(pairs_count, 0), snli_like_pairs(pairs_count // 4, 1)
    grids = {name: Shapes.fit(pairs, 32, order, 0, premise_lengths, hypothesis_lengths)
             for name, pairs, order in (("train", train, "sorted_chunks"),
                                        ("dev", dev, "length_buckets"))}
    batches = task.build_inputs(train, training=True, shapes=grids["train"])
    dev_batches = task.build_inputs(dev, shapes=grids["dev"])
    model = task.compile(task.build_model(200))
    jax.config.update("jax_log_compiles", True)
    handler = Compiles()
    logging.getLogger("jax").addHandler(handler)
    compiled = compilation.compile_ahead(
        model, task.build_inputs(train, training=True, shapes=grids["train"]), dev_batches)
    trains, devs = compiled["train_shapes"], compiled["dev_shapes"]
    ahead = dict(handler.counts)
    history = model.fit(batches, validation_data=dev_batches, epochs=2, verbose=0)
    logging.getLogger("jax").removeHandler(handler)
    jax.config.update("jax_log_compiles", False)
    return {
        "train_shapes": len(batches.describe()[1]), "dev_shapes": len(dev_batches.describe()[1]),
        "ahead": ahead, "compiled_ahead": [trains, devs],
        "during_fit": {name: handler.counts[name] - ahead[name] for name in ahead},
        "steps": len(batches) * 2,
        "loss": history.history["loss"]}


if __name__ == "__main__":
    print(json.dumps(probe(*map(int, sys.argv[1:]))))
