"""SAN4NLI-pytorch's departures from the paper as DSAN options (docs/FIDELITY.md#san4nli):
each option computes what SAN4NLI's code computes, recomputed here in NumPy from the layer's
own weights; each default is the paper's reading; the `san4nli` preset is SAN4NLI's model
(its parameter count, 132,043 without embeddings)."""

import dataclasses

import keras
import numpy as np
import pytest
from helpers import made

from dsan_tf import layers
from dsan_tf.core.config import ExperimentConfig
from dsan_tf.core.task import build_model
from dsan_tf.models import dsan
from dsan_tf.models.dsan.config import DSANConfig

WIDTH, HEADS, T = 20, 4, 6
EPSILON = 1e-5


def layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + EPSILON) * gamma + beta


def randomize_norms(layer, rng):
    """Non-trivial γ and β in every LayerNorm, so that sharing one is visible."""
    for weight in layer.weights:
        if weight.path.endswith(("gamma", "beta")):
            weight.assign(rng.normal(size=weight.shape).astype("float32"))


def np_weights(layer, name):
    return next(np.asarray(w) for w in layer.weights if w.path.endswith(name))


@pytest.fixture
def inputs(rng):
    x = rng.normal(size=(2, T, WIDTH)).astype("float32")
    mask = np.array([[1] * T, [1] * (T - 2) + [0, 0]], bool)
    return x, mask


@pytest.mark.parametrize("scale", ["d_k", "d_e"])
@pytest.mark.parametrize("qkv_norm", ["per_head", "shared"])
def test_attention_weights_are_recomputed_from_the_weights(rng, inputs, scale, qkv_norm):
    """softmax(LN(x W_q) LN(x W_k)ᵀ / √(d_k or d_e) + α·M_dis) over the visible keys, with
    one LayerNorm per projection or one for Q, K and V (SAN4NLI's)."""
    x, mask = inputs
    layer = made(dsan.MaskedMultiHeadAttention, num_heads=HEADS, direction="forward",
                 attention_scale=scale, qkv_norm=qkv_norm, distance_alpha=1.5, dropout=0.0)
    layer(x, padding_mask=mask)
    randomize_norms(layer, rng)
    _, weights = layer(x, padding_mask=mask, return_attention_scores=True)
    k = WIDTH // HEADS
    norms = {}
    for name in ("query", "key"):
        norm = "qkv_norm" if qkv_norm == "shared" else f"{name}_norm"
        norms[name] = layer_norm((x @ np_weights(layer, f"{name}/kernel")).reshape(2, T, HEADS, k),
                                 np_weights(layer, f"{norm}/gamma"),
                                 np_weights(layer, f"{norm}/beta"))
    logits = np.einsum("bqhk,bthk->bhqt", norms["query"], norms["key"]) / np.sqrt(
        k if scale == "d_k" else WIDTH)
    logits = logits - 1.5 * np.abs(np.arange(T)[:, None] - np.arange(T))
    visible = np.asarray(layer.visibility(T, mask))
    logits = np.where(visible, logits, -np.inf)
    has_key = visible.any(-1, keepdims=True)
    expected = np.exp(logits - np.where(has_key, logits.max(-1, keepdims=True), 0))
    expected = np.where(has_key, expected / np.maximum(expected.sum(-1, keepdims=True), 1e-30), 0)
    np.testing.assert_allclose(np.asarray(weights), expected, rtol=1e-4, atol=1e-6)
    names = {w.path.split("/")[-2] for w in layer.weights if w.path.endswith("gamma")}
    assert names == ({"qkv_norm", "attention_output_norm"} if qkv_norm == "shared" else
                     {"query_norm", "key_norm", "value_norm", "attention_output_norm"})


@pytest.mark.parametrize("shared, output_norm", [(False, False), (True, True), (True, False),
                                                 (False, True)])
def test_fusion_gate_norms(rng, inputs, shared, output_norm):
    """S^F = LN(S W^S), H^F = LN(H W^H), F = σ(S^F + H^F + b), out = F S^F + (1 − F) H^F,
    LN'd again with `output_norm`; SAN4NLI's one LayerNorm serves all three."""
    s, _ = inputs
    h = rng.normal(size=s.shape).astype("float32")
    gate_layer = made(layers.FusionGate, dropout=0.0, shared_norm=shared, output_norm=output_norm)
    gate_layer(s, h)
    randomize_norms(gate_layer, rng)
    gate_layer.gate_bias.assign(rng.normal(size=WIDTH).astype("float32"))
    out = np.asarray(gate_layer(s, h))

    def norm(name):
        return np_weights(gate_layer, f"{name}/gamma"), np_weights(gate_layer, f"{name}/beta")

    names = (["projection_norm"] * 3 if shared else
             ["source_projection_norm", "context_projection_norm", "output_norm"])
    s_f = layer_norm(s @ np_weights(gate_layer, "source_projection/kernel"), *norm(names[0]))
    h_f = layer_norm(h @ np_weights(gate_layer, "context_projection/kernel"), *norm(names[1]))
    f = 1 / (1 + np.exp(-(s_f + h_f + np.asarray(gate_layer.gate_bias))))
    expected = f * s_f + (1 - f) * h_f
    if output_norm:
        expected = layer_norm(expected, *norm(names[2]))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert len(gate_layer.trainable_weights) == 3 + 2 * (1 if shared else 2 + output_norm)


@pytest.mark.parametrize("shared", [False, True])
def test_source2token_norms(rng, inputs, shared):
    """Eq. 14 with one LayerNorm each (the default) or one for both projections."""
    x, mask = inputs
    layer = made(layers.Source2TokenAttention, shared_norm=shared)
    layer(x, padding_mask=mask)
    randomize_norms(layer, rng)
    pooled, weights = layer(x, padding_mask=mask, return_attention_scores=True)
    names = ("s2t_norm", "s2t_norm") if shared else ("s2t_hidden_norm", "s2t_score_norm")

    def dense(name, value):
        return value @ np_weights(layer, f"{name}/kernel") + np_weights(layer, f"{name}/bias")

    def norm(name, value):
        return layer_norm(value, np_weights(layer, f"{name}/gamma"),
                          np_weights(layer, f"{name}/beta"))

    hidden = norm(names[0], dense("s2t_hidden", x))
    hidden = np.where(hidden > 0, hidden, np.expm1(hidden))  # ELU
    scores = np.where(mask[:, :, None], norm(names[1], dense("s2t_score", hidden)), -np.inf)
    expected = np.exp(scores - scores.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(np.asarray(weights), expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pooled), (expected * x).sum(1), rtol=1e-4, atol=1e-5)


def test_max_pooling_over_zero_filled_padding():
    """SAN4NLI's max(u ⊙ mask): a feature negative on every real token pools to 0 when
    the sentence has padding, and to its real maximum without padding or when masked."""
    x = -np.arange(1, 13, dtype="float32").reshape(1, 4, 3)
    x[0, 1, 2] = 5.0
    mask = np.array([[1, 1, 0, 0]], bool)
    zeros = made(layers.MaskedMaxPooling, padding="zeros")
    np.testing.assert_array_equal(np.asarray(zeros(x, padding_mask=mask)), [[0.0, 0.0, 5.0]])
    np.testing.assert_array_equal(np.asarray(zeros(x, padding_mask=np.ones((1, 4), bool))),
                                  [[-1.0, -2.0, 5.0]])
    np.testing.assert_array_equal(np.asarray(made(layers.MaskedMaxPooling)(x, padding_mask=mask)),
                                  [[-1.0, -2.0, 5.0]])
    with pytest.raises(ValueError, match="padding must be one of"):
        made(layers.MaskedMaxPooling, padding="zero")


@pytest.mark.parametrize("ffn_dropout", [False, True])
def test_ffn_dropout_acts_only_when_asked(rng, inputs, ffn_dropout):
    """With the attention's and the gate's dropout off, a training call differs from an
    inference call only through the FFN's dropout (SAN4NLI's; the paper names none)."""
    x, mask = inputs
    block = made(dsan.DSANBlock, "forward", num_heads=HEADS, ffn_dim=2 * WIDTH, dropout=0.5,
                 ffn_dropout=ffn_dropout)
    block(x, padding_mask=mask)
    block.attention.output_dropout.rate = 0.0
    block.fusion_gate.gate_dropout.rate = 0.0
    assert block.feed_forward.dropout == (0.5 if ffn_dropout else 0.0)
    trained = np.asarray(block(x, padding_mask=mask, training=True))
    inferred = np.asarray(block(x, padding_mask=mask, training=False))
    assert np.allclose(trained, inferred, atol=1e-6) != ffn_dropout


def test_san4nli_initialization_statistics():
    """Q, K, V: Xavier-normal of SAN4NLI's [h, d_e, d_k] tensors, std √(2 / (d_e·d_k +
    h·d_k)) = 0.060 at d_e 50, h 5; W^S, W^H: Xavier-normal of [d_e, d_e]; every other
    kernel and bias U(±1/√fan_in), PyTorch's nn.Linear default. The paper's reading keeps
    Glorot-uniform kernels and zero biases."""
    config = dataclasses.replace(
        ExperimentConfig.named("san4nli", vocab_size=200).model_config,
        classifier_units=300)
    keras.utils.set_random_seed(0)
    model = build_model("dsan", config)
    model({"premise": np.ones((1, 3), "int32"), "hypothesis": np.ones((1, 3), "int32")})
    checked = 0
    for weight in model.trainable_weights:
        value, path = np.asarray(weight), weight.path
        if path.endswith(("gamma", "beta", "gate_bias", "embeddings")):
            continue
        fan_in = value.shape[0] if value.ndim == 2 else {
            "attention_output": 50, "ffn_hidden": 50, "ffn_output": 200, "s2t_hidden": 100,
            "s2t_score": 100, "classifier_hidden": 800, "classifier_logits": 300}[
                path.split("/")[-2]]
        if path.split("/")[-2] in ("query", "key", "value"):
            assert abs(value.std() - np.sqrt(2 / (50 * 10 + 5 * 10))) < 0.004, path
        elif "_projection/" in path:
            assert abs(value.std() - np.sqrt(1 / 50)) < 0.01, path
        else:
            limit = 1 / np.sqrt(fan_in)
            assert np.abs(value).max() <= limit, path
            if value.size >= 50:  # uniform: std limit/√3, values near the bounds
                assert abs(value.std() - limit / np.sqrt(3)) < 0.2 * limit, path
                assert np.abs(value).max() > 0.8 * limit, path
        checked += 1
    assert checked == 2 * (5 + 2 + 4) + 4 + 4  # blocks (Q K V, W^O and b; W^S W^H; FFN), s2t, head
    keras.utils.set_random_seed(0)
    again = build_model("dsan", config)
    again({"premise": np.ones((1, 3), "int32"), "hypothesis": np.ones((1, 3), "int32")})
    for mine, theirs in zip(model.weights, again.weights):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    paper = build_model("dsan", dataclasses.replace(config, initialization="glorot"))
    paper({"premise": np.ones((1, 3), "int32"), "hypothesis": np.ones((1, 3), "int32")})
    biases = [w for w in paper.trainable_weights if w.path.endswith("/bias")]
    assert biases and all(not np.asarray(b).any() for b in biases)


def test_classifier_input_dropout_follows_the_option():
    config = ExperimentConfig.named("snli25k_glove50", vocab_size=100).model_config
    assert build_model("dsan", config).head.input_dropout_rate == 0.0
    san = dataclasses.replace(config, classifier_input_dropout=True, dropout=0.3)
    assert build_model("dsan", san).head.input_dropout_rate == 0.3


def test_defaults_are_the_papers_and_the_preset_is_san4nli(tmp_path):
    """Each option's default is the paper's reading (the study's DSAN keeps 334,023
    parameters); `san4nli` sets all of them and has SAN4NLI's 132,043 parameters
    (without embeddings); its model saves and reloads with the same outputs."""
    paper = DSANConfig()
    departures = {"attention_scale": ("d_k", "d_e"), "qkv_norm": ("per_head", "shared"),
                  "fusion_norm": ("separate", "shared"), "fusion_output_norm": (False, True),
                  "ffn_dropout": (False, True), "s2t_norm": ("separate", "shared"),
                  "max_pool_padding": ("masked", "zeros"),
                  "initialization": ("glorot", "san4nli"),
                  "classifier_input_dropout": (False, True), "classifier_units": (300, 50)}
    preset = ExperimentConfig.named("san4nli", vocab_size=300)
    assert preset.data.batching == "plain"
    assert preset.data == ExperimentConfig.named("snli25k_glove50").data.__class__(
        **{**dataclasses.asdict(ExperimentConfig.named("snli25k_glove50").data),
           "batching": "plain"})
    for name, (default, theirs) in departures.items():
        assert getattr(paper, name) == default, name
        assert getattr(preset.model_config, name) == theirs, name
    study = build_model("dsan", ExperimentConfig.named("snli25k_glove50",
                                                             vocab_size=300).model_config)
    model = build_model("dsan", preset.model_config)
    ids = {"premise": np.array([[5, 6, 7, 0], [8, 9, 10, 11]], "int32"),
           "hypothesis": np.array([[5, 12, 0, 0], [13, 14, 15, 0]], "int32")}
    expected = np.asarray(model(ids))
    assert study.parameter_breakdown()["params_excluding_embeddings"] == 334_023
    assert model.parameter_breakdown()["params_excluding_embeddings"] == 132_043
    model.save(tmp_path / "san4nli.keras")
    again = keras.saving.load_model(tmp_path / "san4nli.keras")
    np.testing.assert_allclose(np.asarray(again(ids)), expected, atol=1e-6)
    assert again.backbone.get_config() == model.backbone.get_config()
    assert DSANConfig.from_dict(preset.model_config.to_dict()) == preset.model_config
