"""The distance-prior family: formulas, constraints under training, parameter counts."""

import dataclasses

import keras
import numpy as np
import pytest
from helpers import made

from dsan_tf import DSANConfig, build_model, layers
from dsan_tf.layers import masks
from dsan_tf.models import dsan
from dsan_tf.models.config import PRIORS

D = np.abs(np.arange(6)[:, None] - np.arange(6)[None, :])


def bias(prior, **kwargs):
    layer = layers.DistancePrior(prior, **kwargs)
    return np.asarray(layer(masks.distances(6))), layer


def test_formulas_at_initialisation():
    np.testing.assert_allclose(bias("linear", alpha=1.5)[0], -1.5 * D)
    np.testing.assert_allclose(bias("gaussian", initial_weight=0.3)[0], -0.3 * D**2, rtol=1e-6)
    np.testing.assert_allclose(bias("zipf")[0], np.log(1.0 / (D + 1)), rtol=1e-6)
    np.testing.assert_allclose(bias("none")[0], np.zeros_like(D))
    variant, layer = bias("gaussian_variant", initial_weight=0.5)
    layer.bias.assign(-2.0)
    np.testing.assert_allclose(np.asarray(layer(masks.distances(6))),
                               -np.abs(0.5 * D**2 - 2.0), rtol=1e-6)
    _, learned = bias("learned", max_distance=3)
    learned.distance_bias.assign([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(learned(masks.distances(6))), np.minimum(D, 3))


def test_linear_prior_is_the_papers_distance_mask():
    np.testing.assert_allclose(bias("linear", alpha=1.5)[0], 1.5 * np.asarray(masks.distance_mask(6)))


def test_constraints_hold_while_training():
    """Optimizer steps that push w below 0 and b above 0 end at the bounds."""
    prior = layers.DistancePrior("gaussian_variant", min_weight=1e-3)
    prior.build()
    optimizer = keras.optimizers.SGD(10.0)
    for _ in range(3):
        optimizer.apply([keras.ops.convert_to_tensor(1.0), keras.ops.convert_to_tensor(-1.0)],
                        [prior.weight, prior.bias])
    assert float(keras.ops.convert_to_numpy(prior.weight)) == pytest.approx(1e-3)
    assert float(keras.ops.convert_to_numpy(prior.bias)) == 0.0


def test_constraints_hold_in_a_trained_dsan(small_config, rng):
    config = dataclasses.replace(small_config, distance_prior="gaussian_variant")
    model = build_model("dsan", config)
    model.compile(keras.optimizers.Adam(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ids = rng.integers(2, config.vocab_size, size=(32, 9)).astype("int32")
    model.fit({"premise": ids, "hypothesis": ids[::-1]}, rng.integers(0, 3, size=32),
              epochs=4, batch_size=8, verbose=0)
    priors = [w for w in model.weights if "distance_prior" in w.path]
    assert {w.path.rsplit("/", 1)[-1] for w in priors} == {"weight", "bias"}
    for w in priors:
        value = float(w.numpy())
        assert (value >= np.float32(1e-4)) if w.path.endswith("weight") else (value <= 0.0)
    assert any(abs(float(w.numpy()) - init) > 1e-3 for w, init in
               ((w, 1.0 if w.path.endswith("weight") else 0.0) for w in priors))


@pytest.mark.parametrize("prior, extra", [
    ("none", 0), ("zipf", 0), ("gaussian", 2), ("gaussian_variant", 4), ("learned", 2 * 11)])
def test_prior_adds_only_its_scalars(prior, extra):
    paper = DSANConfig(vocab_size=10)
    count = lambda config: build_model("dsan", config).parameter_breakdown()  # noqa: E731
    base, other = count(paper), count(dataclasses.replace(paper, distance_prior=prior))
    assert other["params_excluding_embeddings"] - base["params_excluding_embeddings"] == extra
    assert other["forward_block.masked_attention"] - base["forward_block.masked_attention"] \
        == extra // 2


@pytest.mark.parametrize("prior", PRIORS)
def test_every_prior_keeps_masking_exact_and_finite_in_half_precision(rng, prior):
    keras.config.set_dtype_policy("mixed_float16")
    layer = made(dsan.MaskedMultiHeadAttention, num_heads=4, direction="forward",
                 distance_prior=prior)
    x = (rng.normal(size=(2, 6, 16)) * 30).astype("float32")
    padding = np.array([[True] * 6, [True] * 4 + [False] * 2])
    out, weights = layer(x, padding_mask=padding, return_attention_scores=True)
    weights = np.asarray(weights)
    assert np.isfinite(np.asarray(out, dtype="float32")).all()
    visible = np.tril(np.ones((6, 6), bool), -1)
    assert (weights[:, :, ~visible] == 0).all() and (weights[1, :, :, 4:] == 0).all()
    np.testing.assert_allclose(weights[0, :, 1:].sum(-1), 1.0, rtol=1e-5)
