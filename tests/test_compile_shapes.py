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


def test_k_steps_as_one_program_train_as_the_steps_one_by_one():
    """`steps_per_execution` K on JAX (`dsan_tf.models.multi_step`): K batches of one shape
    run as one scan of the training step, skip steps (weights all 0) change nothing, and
    the weights, seeds, optimizer step count and metrics are those of the same batches run
    one step at a time."""
    import numpy as np

    from dsan_tf.data.batching import NLIBatches, Shapes
    from dsan_tf.experiment.config import ExperimentConfig, TrainingConfig, model_config
    from dsan_tf.experiment.task import NLITask
    from dsan_tf.training.compilation import _Batches
    from test_batching import varied_pairs

    def model(steps):
        keras.utils.set_random_seed(0)
        task = NLITask(ExperimentConfig(
            model_config=model_config("dsan", embedding_dim=8, num_heads=2, ffn_dim=16,
                                      classifier_units=8),
            training=TrainingConfig(steps_per_execution=steps, jit_compile=True)),
            log=lambda *a: None)
        return task.compile(task.build_model(50))

    def state(m):
        return [keras.ops.convert_to_numpy(v.value) for v in
                [*m.variables, *m.optimizer.variables, *m.metrics_variables]]

    pairs = varied_pairs(300)
    runs = NLIBatches(pairs, 32, shapes=Shapes.fit(pairs, 32, "sorted_chunks", 0, 1, 2),
                      seed=1, run_length=4)
    epoch = [runs[i] for i in range(len(runs))]
    real = [batch for batch in epoch if batch[2].any()]
    assert len({NLIBatches.shape_of(b) for b in real}) == 2 and len(real) < len(epoch)
    one_by_one, scanned = model(1), model(4)
    logs = [m.fit(_Batches(batches), shuffle=False, verbose=0).history for m, batches in
            ((one_by_one, real), (scanned, epoch))]
    assert "jax_train_function" in scanned.train_function.__qualname__  # not Keras' loop
    assert int(scanned.optimizer.iterations) == len(real)
    for expected, got in zip(state(one_by_one), state(scanned)):
        np.testing.assert_allclose(got, expected, atol=2e-5)
    assert logs[1]["accuracy"] == pytest.approx(logs[0]["accuracy"], abs=1e-6)
    assert logs[1]["loss"] == pytest.approx(logs[0]["loss"], abs=1e-5)
