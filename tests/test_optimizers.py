"""`dsan_tf.models.optimizers`: Adam and AdamW with one fused update op per variable on TensorFlow
give Keras' weights, in a fraction of the graph, and are what the project compiles with."""

import keras
import numpy as np
import pytest

import dsan_tf
from dsan_tf.core.config import TrainingConfig
from dsan_tf.core.optimization import default_jit_compile, make_optimizer
from dsan_tf.core.task import NLITask
from dsan_tf.models import optimizers

pytestmark = pytest.mark.tensorflow  # the fused kernel is TensorFlow's

RNG = np.random.default_rng(0)
BATCHES = [({"premise": RNG.integers(1, 30, (8, 9)).astype("int32"),
             "hypothesis": RNG.integers(1, 30, (8, 6)).astype("int32")},
            RNG.integers(0, 3, (8,))) for _ in range(6)]


# Biases under a softmax that is shift-invariant along their axis (the keys' LayerNorm β,
# the source2token score's β) have no true gradient: Adam turns the gradient's rounding
# noise into steps of up to the learning rate, so they agree only to the step size.
NO_GRADIENT = ("key_norm/beta", "s2t_score_norm/beta")


def _assert_close(model, weights, expected):
    for variable, got, want in zip(model.trainable_variables, weights, expected):
        if variable.path.endswith(NO_GRADIENT):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4, err_msg=variable.path)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=variable.path)


def _trained(optimizer, family="dsan", trainable_embeddings=False):
    """(losses, initial weights, weights, model) after six steps of `optimizer` on a small
    model of `family`."""
    keras.utils.set_random_seed(0)
    extra = dict(num_heads=2, ffn_dim=16, dropout=0.0) if family == "dsan" else {}
    config = dsan_tf.model_config(family, vocab_size=30, embedding_dim=8, classifier_units=8,
                                  trainable_embeddings=trainable_embeddings, **extra)
    model = dsan_tf.build_model(family, config)
    model.compile(optimizer=optimizer or "auto", jit_compile=default_jit_compile())
    initial = [v.numpy() for v in model.trainable_variables]
    losses = [float(model.train_on_batch(x, y)[0]) for x, y in BATCHES]
    return losses, initial, [v.numpy() for v in model.trainable_variables], model


@pytest.fixture(scope="module")
def fused_dsan():
    return _trained(optimizers.Adam(3e-3))


@pytest.mark.parametrize("kind", ["adam", "adamw"])
def test_fused_updates_give_keras_weights(kind, fused_dsan):
    """Six steps of a DSAN with Adam, of a CBOW with AdamW on a cosine-restart schedule:
    the losses and weights Keras' own optimizer gives, to float rounding; every weight
    moved."""
    if kind == "adam":
        expected_losses, _, expected, _ = _trained(keras.optimizers.Adam(3e-3))
        losses, initial, weights, model = fused_dsan
    else:
        schedule = lambda: keras.optimizers.schedules.CosineDecayRestarts(3e-3, 4)  # noqa: E731
        expected_losses, _, expected, _ = _trained(
            keras.optimizers.AdamW(schedule(), weight_decay=0.1), "cbow")
        losses, initial, weights, model = _trained(
            optimizers.AdamW(schedule(), weight_decay=0.1), "cbow")
    assert int(model.optimizer.iterations.numpy()) == len(BATCHES)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5)
    _assert_close(model, weights, expected)
    assert min(np.abs(a - b).max() for a, b in zip(weights, initial)) > 0  # each one moved


def test_a_sparse_gradient_keeps_keras_update():
    """A trained embedding's gradient is sparse: Keras' update (which squares each slice,
    not their sum) runs for it, so such runs give the numbers they gave before (the fused
    kernel would move these embeddings by up to 5e-3 more)."""
    _, _, expected, _ = _trained(keras.optimizers.Adam(3e-3), "cbow", True)
    _, _, weights, model = _trained(optimizers.Adam(3e-3), "cbow", True)
    assert any("embedding" in v.path for v in model.trainable_variables)
    _assert_close(model, weights, expected)


def test_the_update_is_one_op_per_variable(fused_dsan):
    """The optimizer's part of a training step's graph: Keras' Adam writes about 41 ops a
    variable, the fused one at most 12 (a read, a cast and the kernel, under Keras'
    per-variable bookkeeping)."""
    import tensorflow as tf

    variables = fused_dsan[3].trainable_variables

    def ops_of(optimizer):
        optimizer.build(variables)
        grads = [tf.zeros_like(v) for v in variables]
        return len(tf.function(lambda g: optimizer.apply(g, variables)).get_concrete_function(
            grads).graph.get_operations()) / len(variables)

    assert ops_of(keras.optimizers.Adam(1e-3)) > 30
    assert ops_of(optimizers.Adam(1e-3)) <= 12


def test_the_project_compiles_with_them_and_saves_them(tmp_path):
    """`compile()`, `NLITask.compile` and a training configuration give the fused
    classes, and a `.keras` file brings its optimizer back as one."""
    config = dsan_tf.model_config("cbow", vocab_size=30, embedding_dim=8)
    model = dsan_tf.build_model("cbow", config)
    model.compile()
    assert type(model.optimizer) is optimizers.Adam
    assert type(NLITask().compile(dsan_tf.build_model("cbow", config)).optimizer) is \
        optimizers.Adam
    adamw = make_optimizer(TrainingConfig(optimizer="adamw", learning_rate=1e-3), 32, model)
    assert type(adamw) is optimizers.AdamW
    model.fit(*BATCHES[0], verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert type(loaded.optimizer) is optimizers.Adam
    assert int(loaded.optimizer.iterations.numpy()) == 1
