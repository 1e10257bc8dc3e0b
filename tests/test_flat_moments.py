"""`dsan_tf.models.optimizers`' flat moments (Adam's m and v as one vector each, the whole
model's moments updated as one elementwise computation: a GPU's step is bound by its
kernels) give Keras' numbers and keep Keras' file layout. On every backend (the CI's JAX
pass runs this file too, with the step compiled)."""

import keras
import numpy as np
import pytest

import dsan_tf
from dsan_tf.experiment.optimization import compile_for_training
from dsan_tf.models import optimizers

RNG = np.random.default_rng(0)
# Premises and hypotheses of varied lengths, padded (id 0) as batches pad them.
BATCHES = []
for _ in range(5):
    premise = RNG.integers(1, 30, (8, 11)).astype("int32")
    hypothesis = RNG.integers(1, 30, (8, 7)).astype("int32")
    for row, (p, h) in enumerate(zip(RNG.integers(3, 12, 8), RNG.integers(2, 8, 8))):
        premise[row, p:] = 0
        hypothesis[row, h:] = 0
    BATCHES.append(({"premise": premise, "hypothesis": hypothesis}, RNG.integers(0, 3, (8,))))


def _model(optimizer, family="cbow", dropout=0.1):
    keras.utils.set_random_seed(0)
    extra = dict(num_heads=2, ffn_dim=16) if family == "dsan" else {}
    config = dsan_tf.model_config(family, vocab_size=30, embedding_dim=8, classifier_units=8,
                                  trainable_embeddings=False, dropout=dropout, **extra)
    return compile_for_training(dsan_tf.build_model(family, config), optimizer=optimizer)


def _trained(optimizer, family="cbow", batches=BATCHES, dropout=0.1):
    model = _model(optimizer, family, dropout)
    losses = [float(model.train_on_batch(x, y)[0]) for x, y in batches]
    return losses, [v.numpy() for v in model.trainable_variables], model


def _assert_same(got, want):
    # Both compute Keras' formula op by op; a compiler may fuse them differently.
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("family, make", [
    ("dsan", lambda flat: (optimizers.Adam(3e-3, flat_moments=True) if flat
                           else keras.optimizers.Adam(3e-3))),
    ("cbow", lambda flat: (optimizers.AdamW if flat else keras.optimizers.AdamW)(
        keras.optimizers.schedules.CosineDecayRestarts(3e-3, 3), weight_decay=0.1,
        **({"flat_moments": True} if flat else {}))),
])
def test_flat_moments_train_as_keras_adam(family, make):
    """Five steps of DSAN with Adam (dropout on), of CBOW with AdamW on a cosine-restart
    schedule: the losses and weights of Keras' own optimizer; its moments are two vectors
    as long as the model's trained weights."""
    want_losses, want, keras_model = _trained(make(False), family)
    losses, got, model = _trained(make(True), family)
    assert len(model.trainable_variables) > (20 if family == "dsan" else 4)
    np.testing.assert_allclose(losses, want_losses, rtol=2e-6)
    _assert_same(got, want)
    trained = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    moments = [v for v in model.optimizer.variables if v.name in ("momentum", "velocity")]
    assert [tuple(v.shape) for v in moments] == [(trained,), (trained,)]
    assert len(keras_model.optimizer.variables) == len(model.optimizer.variables) - 2 + \
        2 * len(model.trainable_variables)


def test_files_keep_keras_layout_and_load_either_way(tmp_path):
    """The optimizer's stored variables are those of Keras' Adam, a moment a weight: a
    `.keras` file of a flat model reloads flat with its step count, and its store loads
    into Keras' Adam and back, each then training on as the other (no dropout: a fresh
    model's seeds are not a trained one's)."""
    _, _, flat = _trained(optimizers.Adam(3e-3, flat_moments=True), batches=BATCHES[:3],
                          dropout=0.0)
    _, _, plain = _trained(keras.optimizers.Adam(3e-3), batches=BATCHES[:3], dropout=0.0)
    flat_store, plain_store = {}, {}
    flat.optimizer.save_own_variables(flat_store)
    plain.optimizer.save_own_variables(plain_store)
    assert sorted(flat_store) == sorted(plain_store)
    for key in plain_store:
        np.testing.assert_allclose(flat_store[key], plain_store[key], rtol=2e-6, atol=1e-7)

    flat.save(tmp_path / "flat.keras")
    reloaded = keras.saving.load_model(tmp_path / "flat.keras")
    assert reloaded.optimizer.flat_moments is True
    assert int(keras.ops.convert_to_numpy(reloaded.optimizer.iterations)) == 3
    into_plain = _model(keras.optimizers.Adam(3e-3), dropout=0.0)
    into_plain.set_weights(flat.get_weights())
    into_plain.optimizer.load_own_variables(flat_store)
    into_flat = _model(optimizers.Adam(3e-3, flat_moments=True), dropout=0.0)
    into_flat.set_weights(plain.get_weights())
    into_flat.optimizer.load_own_variables(plain_store)
    for model in (reloaded, into_plain, into_flat, plain):
        model.train_on_batch(*BATCHES[3])
    want = [v.numpy() for v in plain.trainable_variables]
    for model in (reloaded, into_plain, into_flat):
        _assert_same([v.numpy() for v in model.trainable_variables], want)


def test_a_store_of_another_model_is_refused_with_a_warning():
    """A store with another count of variables is skipped, saying so (Keras' rule)."""
    optimizer = _model(optimizers.Adam(3e-3, flat_moments=True)).optimizer
    before = [keras.ops.convert_to_numpy(v) for v in optimizer.variables]
    with pytest.warns(UserWarning, match="Skipping variable loading"):
        optimizer.load_own_variables({"0": np.zeros(())})
    for value, variable in zip(before, optimizer.variables):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), value)


def test_a_weight_without_a_gradient_keeps_itself_and_its_moments():
    """Keras filters out empty gradients: the weights that have one move as Keras' Adam
    moves them; the others, and their parts of m and v, stay."""
    models = [_model(optimizers.Adam(3e-3, flat_moments=True)),
              _model(keras.optimizers.Adam(3e-3))]
    for model in models:
        variables = model.trainable_variables
        rng = np.random.default_rng(1)
        for _ in range(2):
            grads = [None if i % 3 == 1 else rng.normal(size=v.shape).astype("float32")
                     for i, v in enumerate(variables)]
            with pytest.warns(UserWarning, match="Gradients do not exist"):  # Keras says so
                model.optimizer.apply(grads, variables)
    flat, plain = models
    before = _model(keras.optimizers.Adam(3e-3)).trainable_variables
    for i, (a, b, start) in enumerate(zip(flat.trainable_variables, plain.trainable_variables,
                                          before)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-6, atol=1e-7)
        assert np.array_equal(a.numpy(), start.numpy()) == (i % 3 == 1)
    store, want = {}, {}
    flat.optimizer.save_own_variables(store)
    plain.optimizer.save_own_variables(want)
    for key in want:
        np.testing.assert_allclose(store[key], want[key], rtol=2e-6, atol=1e-7)


def test_they_are_asked_for():
    """Keras' layout unless asked (fewer GPU kernels at the paper's size, more at d_e 50:
    docs/PERFORMANCE.md); never with AMSGrad, whose third moment is Keras' own."""
    assert _model(optimizers.Adam(1e-3)).optimizer._offsets is None
    assert _model(optimizers.Adam(1e-3, flat_moments=True)).optimizer._offsets is not None
    assert _model(optimizers.Adam(1e-3, amsgrad=True, flat_moments=True)).optimizer \
        ._offsets is None


def test_a_copy_with_flat_moments_keeps_the_optimizers_schedule_and_decay():
    """`with_flat_moments` (how the measurements ask for them): the same class, learning
    rate schedule and weight decay, flat."""
    schedule = keras.optimizers.schedules.CosineDecayRestarts(3e-3, 4)
    copy = optimizers.with_flat_moments(optimizers.AdamW(schedule, weight_decay=0.1))
    assert type(copy) is optimizers.AdamW and copy.flat_moments is True
    assert copy.weight_decay == 0.1
    assert isinstance(copy._learning_rate,
                      keras.optimizers.schedules.CosineDecayRestarts)
    assert copy._learning_rate.get_config() == schedule.get_config()
