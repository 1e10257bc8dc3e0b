r"""Two layouts of one model's training step timed against each other in one process (issue
48): the DSAN encoder's weights stacked or packed into one buffer
(`dsan_tf.layers.stacking.packed`), or Adam's moments a variable each or flat
(`dsan_tf.models.optimizers`). The two models start from the same weights and train on the
same batch, their steps interleaved so that the machine's load falls on both alike:

    KERAS_BACKEND=jax python -m experiments.layout_ab --compare=packed --embedding_dim=50 \
        --steps=60

It prints each layout's median pairs a second and ms a step, and the largest difference
between the two models' weights after the run (0.0: the same numbers, to the bit).
"""

import argparse
import json
import sys
import time

import keras
import numpy as np

from dsan_tf.experiment.config import ExperimentConfig
from dsan_tf.experiment.task import NLITask
from dsan_tf.layers import stacking
from experiments.shape_costs import training_model

VOCAB = 1000


def model(config, embedding_dim, flat_moments):
    """The named configuration at this width (d_ff 4·d_e), compiled for training as
    `shape_costs` measures it (`training_model`); the same weights every call."""
    task = NLITask(ExperimentConfig.named(config, embedding_dim=embedding_dim,
                                          ffn_dim=4 * embedding_dim), log=lambda *a: None)
    return training_model(task, flat_moments, vocab_size=VOCAB)


def compare(layout, embedding_dim, steps, config="dsan_snli", batch=64, lengths=(20, 12)):
    """{layout: {pairs_per_s, ms_per_step}, max_weight_difference}: the default layout
    ("stacked" or "keras") against `layout` ("packed" or "flat_moments")."""
    names = ("stacked", "packed") if layout == "packed" else ("keras", "flat_moments")
    models = {name: model(config, embedding_dim, name == "flat_moments") for name in names}
    rng = np.random.default_rng(0)
    x = {"premise": rng.integers(1, VOCAB, (batch, lengths[0])),
         "hypothesis": rng.integers(1, VOCAB, (batch, lengths[1]))}
    y = rng.integers(0, 3, batch)
    seconds = {name: [] for name in names}
    for step in range(steps + 1):  # the first step of each compiles: not timed
        for name in names if step % 2 else names[::-1]:  # the order alternates
            with stacking.packing(name == "packed"):
                started = time.perf_counter()
                models[name].train_on_batch(x, y)
                seconds[name].append(time.perf_counter() - started)
    result = {name: {"pairs_per_s": round(batch / np.median(times[1:])),
                     "ms_per_step": round(1e3 * np.median(times[1:]), 1)}
              for name, times in seconds.items()}
    weights = [[v.numpy() for v in models[name].trainable_variables] for name in names]
    result["max_weight_difference"] = float(max(np.abs(a - b).max()
                                                for a, b in zip(*weights)))
    return {"config": config, "embedding_dim": embedding_dim, "steps": steps,
            "batch_size": batch, "lengths": list(lengths), "backend": keras.backend.backend(),
            **result}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", choices=("packed", "flat_moments"), required=True)
    parser.add_argument("--config", default="dsan_snli", help="a named configuration "
                        "(5 heads, frozen embeddings, batch 64 in the paper's)")
    parser.add_argument("--embedding_dim", type=int, default=50)
    parser.add_argument("--steps", type=int, default=60, help="timed steps of each")
    args = parser.parse_args(argv)
    if args.compare == "packed" and keras.backend.backend() != "jax":
        sys.exit("--compare=packed packs on JAX only: run it with KERAS_BACKEND=jax.")
    print(json.dumps(compare(args.compare, args.embedding_dim, args.steps, args.config)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
