"""Real shapes, not the demo's one, on JAX (the CI's JAX pass runs this file; other backends
skip it): pairs of SNLI's length distribution batched as training batches them where the
step is compiled. XLA compiles the training and evaluation steps once per batch shape,
or their programs once per sentence length (`dsan_tf.speed.sentence_programs`, JAX's
default on a CPU), before `fit` (compile-ahead), and not once during two epochs of
training and evaluation; several steps run as one program (`multi_step`) and per-length
programs compute what Keras' whole step computes. The default grid over 300 steps is
tests/test_jax.py's slow test."""

import keras
import pytest

from dsan_tf.models import registry
import families

pytestmark = pytest.mark.skipif(keras.backend.backend() != "jax",
                                reason="counts XLA compilations of JAX (KERAS_BACKEND=jax)")


def test_varied_lengths_compile_once_per_shape_before_fit_and_never_during_it():
    from jax_shapes_probe import probe

    result = probe(600, 2, 1, sentence_programs=False)  # a 2 x 1 grid: at most 2 shapes
    assert result["train_shapes"] == 2 and 1 <= result["dev_shapes"] <= 2
    assert result["ahead"] == {"train_step": result["train_shapes"],
                               "test_step": result["dev_shapes"]}
    assert result["during_fit"] == {}
    assert result["steps"] == 38


def test_per_length_programs_compile_once_per_sentence_length_before_fit():
    """With `sentence_programs` (the CPU's default on JAX), a training shape's lengths
    are compiled once whatever shape they come in: the encoder's programs once per
    sentence length of the training (and evaluation) shapes, the head's once; and
    nothing during two epochs."""
    from jax_shapes_probe import probe

    result = probe(600, 3, 2)
    train, dev = result["lengths"]["train"], result["lengths"]["dev"]
    assert result["train_shapes"] >= 4 and len(train) < 2 * result["train_shapes"]
    assert result["ahead"] == {"encode": len(train), "backward": len(train),
                               "head_gradient": 1, "update": 1, "inference": len(dev),
                               "evaluation": 1}
    assert result["during_fit"] == {}
    assert result["steps"] == 38


def test_per_length_programs_choose_one_grid_for_both_sides_and_say_shape_costs_is_unused():
    """With per-length programs, training shapes are one grid of lengths for both sides
    (`Shapes.fit_shared`), logged with its padding against two grids; a `shape_costs` the
    user set, which prices whole steps, is reported unused rather than dropped silently."""
    from dsan_tf.core.config import DataConfig, ExperimentConfig, RunPolicy
    from dsan_tf.core.task import NLITask
    from test_batching import varied_pairs

    for setting in ("device", "padding"):
        lines = []
        task = NLITask(ExperimentConfig(data=DataConfig(batch_size=32)),
                       RunPolicy(shape_costs=setting, jit_compile=True,
                                 sentence_programs=True), log=lines.append)
        shapes = task.plan.shapes(varied_pairs(300))
        assert shapes.premise_grid == shapes.hypothesis_grid
        assert f"batch shapes of {shapes.chosen['lengths']} sentence lengths for both sides" \
            in lines[0]
        assert ("--shape_costs=padding not used" in lines[0]) == (setting == "padding")


def test_a_regularizer_keeps_keras_whole_step():
    """A weight or activity regularizer adds to the loss, which the per-length programs
    would differentiate by the head alone: the model keeps Keras' step."""
    from dsan_tf import build_model
    from dsan_tf.speed import sentence_programs
    from helpers import SMALL, config_for

    def model():
        m = build_model("dsan", config_for("dsan", **SMALL))
        m.compile(jit_compile=True, sentence_programs=True)
        return m

    plain, weight, activity = model(), model(), model()
    assert sentence_programs.applies(plain)
    weight.backbone.trainable_weights[0].regularizer = keras.regularizers.L2(0.01)
    activity.head.activity_regularizer = keras.regularizers.L1(0.01)
    assert not sentence_programs.applies(weight) and not sentence_programs.applies(activity)


def test_k_steps_as_one_program_train_as_the_steps_one_by_one():
    """`steps_per_execution` K on JAX (`dsan_tf.speed.multi_step`): K batches of one shape
    run as one scan of the training step, skip steps (weights all 0) change nothing, and
    the weights, seeds, optimizer step count and metrics are those of the same batches run
    one step at a time."""
    import numpy as np

    from dsan_tf.data.batching import NLIBatches, Shapes
    from dsan_tf.core.config import ExperimentConfig, RunPolicy, model_config
    from dsan_tf.core.task import NLITask
    from dsan_tf.speed.compilation import _Batches
    from test_batching import varied_pairs

    def model(steps):
        keras.utils.set_random_seed(0)
        task = NLITask(ExperimentConfig(
            model_config=model_config("dsan", embedding_dim=8, num_heads=2, ffn_dim=16,
                                      classifier_units=8)),
            RunPolicy(steps_per_execution=steps, jit_compile=True, sentence_programs=False),
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


def test_steps_of_per_length_programs_compute_what_keras_whole_step_computes():
    """`dsan_tf.speed.sentence_programs`: the same batches (varied shapes that share
    lengths, rows of weight 0, dropout on) through Keras' whole step and through the
    per-length programs give the same weights, optimizer slots and step count, metrics,
    dropout seeds, logs, evaluation and predictions; the encoder's training program is
    compiled once per sentence length, not once per shape."""
    import numpy as np

    from dsan_tf.data.batching import NLIBatches, Shapes
    from dsan_tf.core.config import ExperimentConfig, RunPolicy, model_config
    from dsan_tf.core.task import NLITask
    from test_batching import varied_pairs

    def model(programs):
        keras.utils.set_random_seed(0)
        task = NLITask(ExperimentConfig(
            model_config=model_config("dsan", embedding_dim=8, num_heads=2, ffn_dim=16,
                                      classifier_units=8, dropout=0.3)),
            RunPolicy(jit_compile=True, sentence_programs=programs), log=lambda *a: None)
        return task.compile(task.build_model(50))

    def state(m):
        return [keras.ops.convert_to_numpy(v.value) for v in
                [*m.variables, *m.optimizer.variables, *m.metrics_variables]]

    # Two lengths shared by both sides: three or four training shapes, two lengths'
    # programs; evaluation in one shape (a compile each for the whole step's test and
    # predict programs: sharing across its shapes is the probe's test above).
    pairs, held_out = varied_pairs(150), varied_pairs(40, seed=2)
    shapes = Shapes((16, 60), (16, 60), 32)
    epochs = lambda: (NLIBatches(pairs, 32, shapes=shapes, seed=1),  # noqa: E731
                      NLIBatches(held_out, 32, "length_buckets", Shapes((60,), (60,), 32),
                                 shuffle=False))
    train, dev = epochs()
    assert any(not w.all() for _, _, w in (train[i] for i in range(len(train))))
    results = {}
    for programs in (False, True):
        m, (train, dev) = model(programs), epochs()  # each model the same passes
        history = m.fit(train, validation_data=dev, epochs=2, verbose=0).history
        results[programs] = (m, history, state(m), m.evaluate(dev, verbose=0),
                             m.predict(dev, verbose=0))
    (whole, whole_logs, *whole_rest), (split, split_logs, *split_rest) = \
        results[False], results[True]
    assert whole._programs is None and split._programs is not None
    for expected, got in zip(whole_rest[0], split_rest[0]):
        np.testing.assert_allclose(got, expected, atol=2e-5)
    for key in whole_logs:
        np.testing.assert_allclose(split_logs[key], whole_logs[key], atol=1e-5)
    np.testing.assert_allclose(split_rest[1], whole_rest[1], atol=1e-5)
    np.testing.assert_allclose(split_rest[2], whole_rest[2], atol=1e-5)
    shapes_used = train.describe()[1]
    assert len(shapes_used) >= 3  # of lengths 16 and 60: two training programs, not three
    assert split._programs.compiled["encode"]._cache_size() == 2


@pytest.mark.parametrize("name", [name for name in registry.names() if name != registry.DEFAULT])
def test_every_sentence_encoder_family_steps_alike_by_length_and_a_pair_family_keeps_keras_step(
        name):
    """Each other family of the registry (DSAN's two epochs are above), at its smallest
    size: a sentence encoder's training step of per-length programs updates the weights
    as Keras' whole step does; a pair model (`Family.pair_input`) keeps Keras' step."""
    import numpy as np

    from dsan_tf import build_model
    from dsan_tf.speed import sentence_programs
    from helpers import SMALL, config_for

    def model(programs):
        keras.utils.set_random_seed(0)
        m = build_model(name, config_for(name, **{**SMALL, "num_heads": 2,
                                                  **families.small(name)}))
        m.compile(jit_compile=True, sentence_programs=programs)
        return m

    rng = np.random.default_rng(0)
    x = {"premise": rng.integers(1, 50, (4, 7)).astype("int32"),
         "hypothesis": rng.integers(1, 50, (4, 5)).astype("int32")}
    x["premise"][1, 3:] = 0
    y = np.array([0, 1, 2, 1])
    split = model(True)
    if registry.family(name).pair_input:  # never run: Keras' step, as with it off
        assert not sentence_programs.applies(split)
        return
    whole = model(False)
    for m in (whole, split):
        m.train_on_batch(x, y)
    assert split._programs is not None and whole._programs is None
    for expected, got in zip(whole.trainable_variables, split.trainable_variables):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), atol=1e-5)


def test_a_keras_distribution_keeps_keras_steps_and_fits():
    """Under a Keras distribution (`DataParallel`), the model keeps Keras' own sharded
    steps, made where Keras makes them: `fit` trains (the speed package's steps would be
    made after Keras has handed the variables' values to the step, and fail)."""
    import jax
    import numpy as np

    from dsan_tf import build_model
    from dsan_tf.core.config import RunPolicy
    from dsan_tf.core.task import NLITask
    from helpers import SMALL, config_for

    keras.distribution.set_distribution(
        keras.distribution.DataParallel(devices=jax.devices("cpu")[:1]))
    try:
        model = NLITask(policy=RunPolicy(jit_compile=True, sentence_programs=True)).compile(
            build_model("cbow", config_for("cbow", **SMALL)))
        rng = np.random.default_rng(0)
        x = {"premise": rng.integers(1, 50, (8, 7)).astype("int32"),
             "hypothesis": rng.integers(1, 50, (8, 5)).astype("int32")}
        history = model.fit(x, np.array([0, 1, 2, 1, 0, 1, 2, 0]), batch_size=4, verbose=0)
    finally:
        keras.distribution.set_distribution(None)
    assert np.isfinite(history.history["loss"][0]) and model._programs is None

