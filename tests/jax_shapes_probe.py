"""Under KERAS_BACKEND=jax (tests/test_compile_shapes.py in-process, tests/test_jax.py in a
subprocess): trains a small DSAN for two epochs on
pairs of SNLI's length distribution (records/runs/snli25k_lengths.json) with the training
program's batches and compile-ahead, and prints, as JSON, the shapes an epoch used and
how often XLA compiled the training and evaluation steps before and during `fit`."""

import collections
import json
import logging
import pathlib
import re
import sys

import jax
import numpy as np

from dsan_tf.core.config import DataConfig, ExperimentConfig, RunPolicy, model_config
from dsan_tf.data.batching import (HYPOTHESIS_LENGTHS, PREMISE_LENGTHS, IdPairs,
                                   Shapes)
from dsan_tf.core.task import NLITask
from dsan_tf.speed import compilation

PROFILE = pathlib.Path(__file__).parent.parent / "records" / "runs" / "snli25k_lengths.json"


def snli_like_pairs(count, seed):
    return IdPairs.like_profile(json.loads(PROFILE.read_text()), count, seed)


class Compiles(logging.Handler):
    """Counts XLA's compiles by the jitted function's name."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def emit(self, record):
        found = re.search(r"Finished XLA compilation of jit\((\w+)\)", record.getMessage())
        if found:
            self.counts[found.group(1)] += 1


# The programs counted: Keras' whole steps, or the per-length programs
# (`dsan_tf.speed.sentence_programs`).
PROGRAMS = ("train_step", "test_step", "encode", "backward", "head_gradient", "update",
            "inference", "evaluation")


def probe(pairs_count, premise_lengths=PREMISE_LENGTHS, hypothesis_lengths=HYPOTHESIS_LENGTHS,
          sentence_programs=None):
    """What the module docstring says, as a dict; `sentence_programs` is
    `RunPolicy`'s (None: on a CPU)."""
    config = ExperimentConfig(
        model_config=model_config("dsan", embedding_dim=16, num_heads=2, ffn_dim=32,
                                  classifier_units=16, vocab_size=200),
        data=DataConfig(batch_size=32, seed=0))
    task = NLITask(config, RunPolicy(jit_compile=True, sentence_programs=sentence_programs))
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
    ahead = {name: handler.counts[name] for name in PROGRAMS if handler.counts[name]}
    history = model.fit(batches, validation_data=dev_batches, epochs=2, verbose=0)
    logging.getLogger("jax").removeHandler(handler)
    jax.config.update("jax_log_compiles", False)
    lengths = {split: sorted({width for shape in shapes.describe()[1] for width in shape[1:]})
               for split, shapes in (("train", batches), ("dev", dev_batches))}
    return {
        "train_shapes": len(batches.describe()[1]), "dev_shapes": len(dev_batches.describe()[1]),
        "lengths": lengths, "ahead": ahead, "compiled_ahead": [trains, devs],
        "during_fit": {name: handler.counts[name] - ahead.get(name, 0) for name in PROGRAMS
                       if handler.counts[name] - ahead.get(name, 0)},
        "steps": len(batches) * 2,
        "loss": history.history["loss"]}


if __name__ == "__main__":
    print(json.dumps(probe(*map(int, sys.argv[1:]))))
