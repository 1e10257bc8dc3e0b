"""Paying for compilation once: JAX's persistent compilation cache, and the training and
evaluation steps traced (TensorFlow) or compiled (XLA) for every batch shape before the
first epoch, so that no epoch's time holds it (docs/PERFORMANCE.md, "The first epoch").
Keras only; JAX where it is the backend.
"""

import os
import time

from dsan_tf.common.frameworks import keras
import numpy as np

from dsan_tf.common.choices import CACHE_DIR
from dsan_tf.data import batching

JAX_CACHE = "jax"  # the folder beside the word-vector caches


def enable_jax_cache(cache_dir, enabled=True):
    """Turns on JAX's persistent compilation cache in `cache_dir`/jax (created) for this
    process: a step compiled once on this machine is loaded, not compiled, by later runs;
    `enabled` False turns it off (JAX's own switch, which `default_jax_cache` honours).
    Returns the folder, or None (off, or another backend)."""
    if keras.backend.backend() != "jax":
        return None
    import jax  # the backend: loaded already

    jax.config.update("jax_enable_compilation_cache", enabled)
    if not enabled:
        return None

    folder = os.path.join(os.path.expanduser(cache_dir), JAX_CACHE)
    os.makedirs(folder, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", folder)
    # Every step is worth keeping: an evaluation step compiles in about a second.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder


def default_jax_cache():
    """What a task model's `compile` does on JAX: the persistent cache on in
    `CACHE_DIR`/jax, as under dsan-train, unless the process chose otherwise (a cache
    folder of its own set, or `jax_enable_compilation_cache` off: `jax.config.update`).
    The first `fit` of text in a fresh process then loads the steps an earlier process
    compiled (192 SNLI pairs, 2 epochs: 2.2 s against TensorFlow's 2.4 s, 8.3 s compiling).
    Returns the folder it turned on, or None."""
    if keras.backend.backend() != "jax":
        return None
    import jax  # the backend: loaded already

    if jax.config.jax_compilation_cache_dir or not jax.config.jax_enable_compilation_cache:
        return None
    return enable_jax_cache(CACHE_DIR)


class _Batches(keras.utils.PyDataset):
    """A fixed list of batches, for `fit` and `evaluate`."""

    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        return self.batches[index]


def compile_ahead(model, train_batches, dev_batches):
    """Runs one training step and one evaluation step on each batch shape of
    `train_batches` and `dev_batches` (`NLIBatches`: the first batch of each shape of pass
    0, a run of `run_length` of it for training; a `tf.data` dataset: its first batch, so
    give fresh datasets, whose shuffling state an iteration would advance), then puts every
    variable back (weights, optimizer slots and step count, metrics, dropout seeds): what
    is left is the compiled (traced) steps.

    Where the model's steps are per-length programs (`dsan_tf.speed.sentence_programs`),
    a shape runs only when it brings a sentence length the earlier shapes did not.

    Returns:
        {"train_shapes": count, "dev_shapes": count, "seconds": all of it, "per_shape":
        [{"step": "train" or "eval", "shape": [B, T1, T2], "seconds"}] (NumPy batches:
        each shape's first step that ran, its compilation)}.
    """
    started = time.perf_counter()
    variables = _state_variables(model)
    saved = [np.array(keras.ops.convert_to_numpy(v.value), copy=True) for v in variables]
    per_shape, shapes = [], {}
    if isinstance(train_batches, batching.NLIBatches):
        for step, batches in (("train", train_batches), ("eval", dev_batches)):
            firsts = batches.first_of_each_shape()
            shapes[step] = len(firsts)
            for shape, batch in _needed(model, firsts).items():
                began = time.perf_counter()
                if step == "train":  # a run of K: the program of K steps (multi_step)
                    model.fit(_Batches([batch] * batches.run_length), epochs=1, verbose=0,
                              shuffle=False)
                else:
                    model.evaluate(_Batches([batch]), verbose=0)
                per_shape.append({"step": step, "shape": list(shape),
                                  "seconds": round(time.perf_counter() - began, 3)})
        trains, devs = shapes["train"], shapes["eval"]
    else:
        model.fit(train_batches.take(1), epochs=1, verbose=0, shuffle=False)
        model.evaluate(dev_batches.take(1), verbose=0)
        trains = devs = 1
    for variable, value in zip(variables, saved):
        variable.assign(value)
    return {"train_shapes": trains, "dev_shapes": devs,
            "seconds": round(time.perf_counter() - started, 3), "per_shape": per_shape}


def _needed(model, firsts):
    """Of {shape: batch}, those to run: all, or with per-length programs
    (`dsan_tf.speed.sentence_programs`) those that bring a sentence length the earlier
    shapes did not (the others' programs are compiled by then)."""
    from dsan_tf.speed import sentence_programs  # Keras only

    if not sentence_programs.applies(model):
        return firsts
    needed, lengths = {}, set()
    for shape, batch in firsts.items():
        if not lengths.issuperset(shape[1:]):
            lengths.update(shape[1:])
            needed[shape] = batch
    return needed


def _state_variables(model):
    """Every variable a training step changes, once each."""
    seen, result = set(), []
    for variable in [*model.variables, *model.optimizer.variables, *model.metrics_variables]:
        if id(variable) not in seen:
            seen.add(id(variable))
            result.append(variable)
    return result
