"""Real shapes, not the demo's one, on JAX (the CI's JAX pass runs this file; other backends
skip it): pairs of SNLI's length distribution batched as training batches them where the
step is compiled. XLA compiles the training and evaluation steps once per batch shape,
before `fit` (compile-ahead), and not once during two epochs of training and evaluation.
The default grid over 300 steps is tests/test_jax.py's slow test."""

import keras
import pytest

pytestmark = pytest.mark.skipif(keras.backend.backend() != "jax",
                                reason="counts XLA compilations of JAX (KERAS_BACKEND=jax)")


def test_varied_lengths_compile_once_per_shape_before_fit_and_never_during_it():
    from jax_shapes_probe import probe

    result = probe(1200, 2, 2)  # a 2 x 2 length grid: at most 4 shapes
    assert 2 <= result["train_shapes"] <= 4 and 2 <= result["dev_shapes"] <= 4
    assert result["ahead"] == {"train_step": result["train_shapes"],
                               "test_step": result["dev_shapes"]}
    assert result["during_fit"] == {"train_step": 0, "test_step": 0}
    assert result["steps"] == 76
