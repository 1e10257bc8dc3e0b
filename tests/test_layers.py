"""Properties of the individual layers: direction, distance, masking, finiteness."""

import sys

import keras
import numpy as np
import pytest

from dsan_tf import layers
from dsan_tf.models import disan, dsan, registry
import families
from helpers import layer_arguments, made, run_layer_test

WIDTH, HEADS = 24, 4


def block(direction, **kwargs):
    return made(dsan.DSANBlock, direction=direction, num_heads=HEADS, ffn_dim=2 * WIDTH, **kwargs)


def attention(**kwargs):
    kwargs.setdefault("direction", "forward")
    return made(dsan.MaskedMultiHeadAttention, num_heads=HEADS, **kwargs)


def features(rng, batch=3, length=7):
    return rng.normal(size=(batch, length, WIDTH)).astype("float32")


@pytest.mark.parametrize("model", ["dsan", "disan"])
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_direction_is_real(rng, direction, model):
    """Forward output at i ignores tokens after i; backward output ignores tokens before i."""
    layer = (block(direction) if model == "dsan"
             else made(disan.DiSABlock, direction, config=disan.DiSANConfig()))
    x = features(rng)
    base = np.asarray(layer(x, training=False))
    length = x.shape[1]
    for i in range(length):
        changed = x.copy()
        hidden = slice(i + 1, None) if direction == "forward" else slice(0, i)
        changed[:, hidden] = rng.normal(size=changed[:, hidden].shape)
        out = np.asarray(layer(changed, training=False))
        np.testing.assert_allclose(out[:, i], base[:, i], atol=1e-6)
        # ... while the visible side does matter (the test would be empty otherwise).
        if (direction == "forward" and i > 0) or (direction == "backward" and i < length - 1):
            visible = slice(0, i) if direction == "forward" else slice(i + 1, None)
            changed = x.copy()
            changed[:, visible] += 1.0
            assert not np.allclose(np.asarray(layer(changed, training=False))[:, i], base[:, i])


def test_distance_weight_falls_with_distance():
    """Identical keys: weights fall strictly with |i - j|; with alpha = 0 they are uniform."""
    x = np.ones((1, 9, WIDTH), "float32") * np.linspace(-1, 1, WIDTH, dtype="float32")
    _, weights = attention(direction="forward", use_direction_mask=False,
                           distance_alpha=1.5)(x, return_attention_scores=True)
    row = np.asarray(weights)[0, :, 4]  # query in the middle, all heads: [H, T]
    for head in row:
        left, right = head[:4][::-1], head[5:]  # distance 1, 2, ...
        np.testing.assert_allclose(left, right, rtol=1e-5)
        assert np.all(np.diff(right) < 0)
        np.testing.assert_allclose(right[1:] / right[:-1], np.exp(-1.5), rtol=1e-4)
    _, weights = attention(distance_alpha=0.0)(x, return_attention_scores=True)
    for i in range(1, 9):
        np.testing.assert_allclose(np.asarray(weights)[0, :, i, :i], 1.0 / i, rtol=1e-5)


def test_attention_weights_respect_every_mask(rng):
    layer = attention(direction="backward")
    x = features(rng, batch=2, length=6)
    padding = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], bool)
    layer.build(x.shape)
    # Non-zero output bias and LN offset, so a zero output is the layer's doing.
    layer.output_dense.bias.assign(rng.normal(size=WIDTH))
    layer.output_norm.beta.assign(rng.normal(size=WIDTH))
    out, weights = layer(x, padding_mask=padding, return_attention_scores=True)
    weights, out = np.asarray(weights), np.asarray(out)
    visible = np.asarray(layer.visibility(6, padding))[:, 0]  # [B, T, T]
    assert np.all(weights[np.broadcast_to(~visible[:, None], weights.shape)] == 0.0)
    sums = weights.sum(-1)  # [B, H, T]
    has_key = visible.any(-1)[:, None, :]
    np.testing.assert_allclose(sums[np.broadcast_to(has_key, sums.shape)], 1.0, rtol=1e-5)
    # No visible key: the last token (backward) and padded queries get a zero output.
    assert np.all(out[0, 5] == 0.0)
    assert np.all(out[1, 2:] == 0.0)
    assert np.abs(out[1, :2]).sum() > 0


def test_padded_keys_do_not_change_real_positions(rng):
    layer = block("backward")
    x = features(rng, batch=1, length=4)
    padded = np.concatenate([x, rng.normal(size=(1, 3, WIDTH)).astype("float32")], axis=1)
    mask = np.array([[1, 1, 1, 1, 0, 0, 0]], bool)
    np.testing.assert_allclose(np.asarray(layer(padded, padding_mask=mask))[:, :4],
                               np.asarray(layer(x)), atol=1e-5)


@pytest.mark.parametrize("options", [
    {}, dict(qkv_norm="full", use_direction_mask=False, distance_prior="learned"),
    dict(qkv_norm="shared", fusion_norm="shared", fusion_output_norm=True, ffn_dropout=True,
         fusion="raw")], ids=["paper", "full_norm_learned_prior", "san4nli_raw"])
def test_the_encoder_computes_both_blocks_as_each_computes_alone(rng, options):
    """The encoder runs its forward and backward blocks as one pass of ops, their weights
    stacked at run time (`DSANBlock.call` with `partners`). It must compute what each block
    computes alone: the same outputs in training and, on TensorFlow, the same gradient for
    every weight. Dropout, one draw for both, drops in each direction."""
    encoders = []
    for rate in (0.0, 0.0, 0.3):  # the same seed: the same weights
        keras.utils.set_random_seed(7)
        encoder = made(dsan.DSANEncoder, num_heads=HEADS, ffn_dim=2 * WIDTH, dropout=rate,
                       **options)
        encoder.build((None, None, WIDTH))
        encoders.append(encoder)
    stacked, alone, dropping = encoders
    x = features(rng, batch=3, length=6)
    mask = np.ones((3, 6), bool)
    mask[1, 2:] = mask[2, 1:] = False  # padding, and a one-word sentence

    def separately(x):
        encoded = keras.ops.concatenate(
            [block(x, padding_mask=mask, training=True)
             for block in (alone.forward_block, alone.backward_block)], axis=-1)
        return keras.ops.concatenate([alone.source2token(encoded, padding_mask=mask),
                                      alone.max_pooling(encoded, padding_mask=mask)], axis=-1)

    weights = rng.normal(size=(3, 4 * WIDTH)).astype("float32")  # a loss reading every unit
    results = []
    for encoder, run in ((stacked, lambda x: stacked(x, padding_mask=mask, training=True)),
                         (alone, separately)):
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            with tf.GradientTape() as tape:
                outputs = run(x)
                loss = tf.reduce_sum(outputs * weights)
            gradients = tape.gradient(loss, encoder.trainable_variables)
            results.append([outputs] + [g for g in gradients if g is not None])
            assert len(results[-1]) == 1 + len(encoder.trainable_variables)
        else:
            results.append([run(x)])
    for together, apart in zip(*results):
        np.testing.assert_allclose(np.asarray(together), np.asarray(apart), rtol=1e-5,
                                   atol=1e-5)
    _, trained = dropping(x, padding_mask=mask, training=True, return_intermediates=True)
    _, inferred = dropping(x, padding_mask=mask, training=False, return_intermediates=True)
    for side in ("forward", "backward"):
        assert not np.allclose(trained[side]["output"], inferred[side]["output"]), side


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_one_token_sentences_are_finite(rng, policy):
    keras.config.set_dtype_policy(policy)
    encoder = made(dsan.DSANEncoder, num_heads=HEADS, ffn_dim=2 * WIDTH)
    x = features(rng, batch=2, length=5)
    mask = np.array([[1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    vector, info = encoder(x, padding_mask=mask, return_intermediates=True)
    assert encoder.forward_block.attention.compute_dtype == (
        "float16" if policy == "mixed_float16" else "float32")
    assert np.isfinite(np.asarray(vector, "float32")).all()
    for name in ("forward", "backward"):
        assert np.isfinite(np.asarray(info[name]["output"], "float32")).all()
    one_token = encoder(x[:1, :1])
    assert np.isfinite(np.asarray(one_token, "float32")).all()


def test_max_pooling_after_a_masked_lstm_says_nothing_and_passes_no_mask_on():
    """An LSTM given a mask attaches it to its output (a new family reading with LSTMs, as
    AF-DMN does): the pooling reads the mask as its padding_mask, warns of no "destroyed"
    mask, and its [B, D] vector carries none."""
    import warnings

    x = np.random.default_rng(0).random((2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    states = keras.layers.LSTM(3, return_sequences=True)(x, mask=mask)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pooled = made(layers.MaskedMaxPooling)(states, padding_mask=mask)
    assert pooled.shape == (2, 3) and getattr(pooled, "_keras_mask", None) is None


def test_max_pooling_ignores_padding():
    x = -np.ones((1, 4, 3), "float32") * np.array([[[1], [2], [3], [4]]], "float32")
    pooled = made(layers.MaskedMaxPooling)(x, padding_mask=np.array([[0, 1, 1, 0]], bool))
    np.testing.assert_array_equal(np.asarray(pooled), [[-2.0, -2.0, -2.0]])
    empty = made(layers.MaskedMaxPooling)(x, padding_mask=np.zeros((1, 4), bool))
    np.testing.assert_array_equal(np.asarray(empty), np.zeros((1, 3)))


def test_source2token_is_a_softmax_over_real_tokens_per_dimension(rng):
    layer = made(layers.Source2TokenAttention)
    x = features(rng, batch=2, length=5)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    pooled, weights = layer(x, padding_mask=mask, return_attention_scores=True)
    weights = np.asarray(weights)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
    assert np.all(weights[0, 3:] == 0.0)
    np.testing.assert_allclose(np.asarray(pooled), (weights * x).sum(1), rtol=1e-5, atol=1e-6)


def test_fusion_gate_is_a_convex_combination_of_projections(rng):
    gate_layer = made(layers.FusionGate, dropout=0.0)
    s, h = features(rng), features(rng)
    out, gate = gate_layer(s, h, return_gate=True)
    gate = np.asarray(gate)
    assert np.all((gate > 0) & (gate < 1))
    s_f = np.asarray(gate_layer.source_norm(gate_layer.source_dense(s)))
    h_f = np.asarray(gate_layer.context_norm(gate_layer.context_dense(h)))
    np.testing.assert_allclose(np.asarray(out), gate * s_f + (1 - gate) * h_f, atol=1e-5)
    raw = made(layers.FusionGate, fusion="raw", dropout=0.0)
    out, gate = raw(s, h, return_gate=True)
    np.testing.assert_allclose(np.asarray(out), gate * s + (1 - gate) * h, atol=1e-5)


def test_scale_is_sqrt_of_head_width(rng):
    """softmax(QKᵀ/√d_k): recompute one head's weights from its normalised projections."""
    layer = attention(distance_prior="none", use_direction_mask=False)
    x = features(rng, batch=1, length=5)
    _, weights = layer(x, return_attention_scores=True)
    k = WIDTH // HEADS
    q = np.asarray(layer.query_norm(np.asarray(layer.query_dense(x)).reshape(1, 5, HEADS, k)))
    kk = np.asarray(layer.key_norm(np.asarray(layer.key_dense(x)).reshape(1, 5, HEADS, k)))
    logits = np.einsum("qd,td->qt", q[0, :, 0], kk[0, :, 0]) / np.sqrt(k)
    np.fill_diagonal(logits, -np.inf)
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(weights)[0, 0], expected, rtol=1e-4, atol=1e-6)


@pytest.mark.tensorflow
def test_layer_norm_values_and_gradients_are_keras_layer_normalization(rng):
    """The memory-lean gradient is the exact gradient, for the input, γ and β."""
    import tensorflow as tf

    ours, reference = layers.LayerNorm(epsilon=1e-3), keras.layers.LayerNormalization(epsilon=1e-3)
    x = tf.constant(rng.normal(size=(2, 5, HEADS, 6)) * 3.0 + 1.0, tf.float32)
    ours.build(x.shape)
    reference.build(x.shape)
    gamma, beta = rng.normal(size=6), rng.normal(size=6)
    for layer in (ours, reference):
        layer.set_weights([gamma, beta])
    upstream = tf.constant(rng.normal(size=x.shape), tf.float32)
    results = []
    for layer in (ours, reference):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = layer(x)
            loss = tf.reduce_sum(out * upstream)
        results.append([out, *tape.gradient(loss, [x, *layer.trainable_weights])])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-4, atol=1e-5)


B, T = 2, 5
X = np.random.default_rng(7).normal(size=(B, T, WIDTH)).astype("float32")
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
MASKED = {"padding_mask": MASK}
DISTANCES = np.abs(np.arange(T)[:, None] - np.arange(T)).astype("int32")
# The shared layers' cases, name: (class, constructor arguments, positional inputs, keyword
# inputs, output shape, float32 output whatever the policy); each family adds its own from its
# folder (its testing.py, found by tests/families.py).
SHARED_CASES = {
    "fusion_gate": (layers.FusionGate, dict(fusion="raw", dropout=0.3), (X, X[:, ::-1]), {},
                    (B, T, WIDTH), False),
    "feed_forward": (layers.PositionwiseFeedForward, dict(ffn_dim=40), (X,), {},
                     (B, T, WIDTH), False),
    "source2token": (layers.Source2TokenAttention, dict(layer_norm_epsilon=1e-3), (X,), MASKED,
                     (B, WIDTH), False),
    "max_pooling": (layers.MaskedMaxPooling, {}, (X,), MASKED, (B, WIDTH), False),
    "distance_prior": (layers.DistancePrior, dict(prior="learned", max_distance=3),
                       (DISTANCES,), {}, (T, T), True),
    "layer_norm": (layers.LayerNorm, dict(epsilon=1e-3), (X,), {}, (B, T, WIDTH), False),
    "matching_features": (layers.MatchingFeatures, {}, (X[:, 0], X[:, 1]), {}, (B, 4 * WIDTH),
                          False),
    "stack_pair": (layers.StackPair, {}, (X[:, :, 0], X[:, :3, 0]), {}, (2 * B, T), False),
    "split_pair": (layers.SplitPair, {}, (X[:, 0],), {}, (B // 2, 2, WIDTH), False),
    "fusion_gate_san4nli": (layers.FusionGate, dict(shared_norm=True, output_norm=True,
                                                    initialization="san4nli"),
                            (X, X[:, ::-1]), {}, (B, T, WIDTH), False),
    "source2token_san4nli": (layers.Source2TokenAttention, dict(shared_norm=True,
                                                                initialization="san4nli"),
                             (X,), MASKED, (B, WIDTH), False),
    "max_pooling_zeros": (layers.MaskedMaxPooling, dict(padding="zeros"), (X,), MASKED,
                          (B, WIDTH), False),
    "classification_head_san4nli": (layers.ClassificationHead,
                                    dict(hidden_units=8, initialization="san4nli"),
                                    (X[:, 0],), {}, (B, 3), True),
    "classification_head": (layers.ClassificationHead,
                            dict(hidden_units=8, num_classes=3, dropout=0.2, input_dropout=0.3),
                            (X[:, 0],), {}, (B, 3), True),
}


def _completed(cases, config=None):
    """The cases with every configuration value their layers take (`layer_arguments`):
    a family's from its configuration's defaults, the shared layers' from DSAN's."""
    return {case: (layer_class, layer_arguments(layer_class, config, **arguments), *rest)
            for case, (layer_class, arguments, *rest) in cases.items()}


LAYER_CASES = {**_completed(SHARED_CASES), **{
    case: value for name in registry.names()
    for case, value in _completed(families.layer_cases(name, X, MASK, HEADS),
                                  registry.family(name).config()).items()}}


def test_every_layer_has_a_case():
    """A new layer, shared or a family's, is not forgotten by the battery below: every
    Keras layer registered under the package's name (backbones and task models aside)."""
    from dsan_tf.models import registry

    registry.register_keras_classes()
    exported = {value for key, value in keras.saving.get_custom_objects().items()
                if key.startswith("dsan_tf>") and isinstance(value, type)
                and issubclass(value, keras.layers.Layer)
                and not issubclass(value, keras.Model)}
    # Text in, ids out in tf.data (TensorFlow's strings): its own tests
    # (tests/test_text_model.py); without TensorFlow it is not registered.
    preprocessor = keras.saving.get_custom_objects().get("dsan_tf>NLIPreprocessor")
    assert (preprocessor is not None) == (keras.backend.backend() == "tensorflow" or
                                          "tensorflow" in sys.modules and
                                          sys.modules["tensorflow"] is not None)
    exported.discard(preprocessor)
    assert {getattr(layers, name) for name in layers.__all__
            if issubclass(getattr(layers, name), keras.layers.Layer)} <= exported
    tested = {case[0] for case in LAYER_CASES.values()}
    assert exported - tested == set()
    # No family's case hides another's (or a shared one) under the same name.
    names = list(SHARED_CASES) + [case for name in registry.names()
                                  for case in families.layer_cases(name, X, MASK, HEADS)]
    assert len(names) == len(LAYER_CASES)


@pytest.mark.parametrize("name", sorted(LAYER_CASES))
def test_layer_battery(name):
    """Eager and symbolic calls, config round trip, XLA fit, mixed precision."""
    layer_class, init_kwargs, inputs, call_kwargs, shape, float32_output = LAYER_CASES[name]
    run_layer_test(layer_class, init_kwargs, inputs, call_kwargs,
                   expected_output_shape=shape, float32_output=float32_output,
                   fit=name != "distance_prior")  # its output has no batch dimension


def test_classifier_drops_only_the_relu_layer_by_default(rng):
    """Section 4.1 names dropout on the 300-d ReLU layer; the input features are kept."""
    u, v = features(rng, batch=4, length=2)[:, 0], features(rng, batch=4, length=2)[:, 1]
    matched = layers.MatchingFeatures()(u, v)
    paper = made(layers.ClassificationHead, hidden_units=8, dropout=0.0)
    np.testing.assert_allclose(np.asarray(paper(matched, training=True)),
                               np.asarray(paper(matched, training=False)), atol=1e-6)
    extra = made(layers.ClassificationHead, hidden_units=8, dropout=0.0, input_dropout=0.5)
    assert not np.allclose(np.asarray(extra(matched, training=True)),
                           np.asarray(extra(matched, training=False)), atol=1e-3)
