"""The paper's equations written plainly in NumPy (Im & Cho, 2017, Section 4.2: eq. 7-13),
against the layers' one forward path: a DSAN block alone, and both directions computed
together as the encoder computes them (`DSANBlock.call` with `partners`). The reference reads
the layers' weights, every one of them set to random values first, so that a transposed
kernel, a LayerNorm's γ or β left out, a mask or a prior of the wrong sign shows."""

import keras
import numpy as np
import pytest

from dsan_tf.models import dsan
from helpers import made

WIDTH, HEADS, EPSILON = 12, 3, 1e-5


def layer_norm(x, norm):
    """LN over the last axis, with the layer's γ and β."""
    centered = x - x.mean(-1, keepdims=True)
    variance = (centered ** 2).mean(-1, keepdims=True)
    return centered / np.sqrt(variance + EPSILON) * np.asarray(norm.gamma) + np.asarray(norm.beta)


def dense(x, layer):
    """x W (+ b)."""
    out = x @ np.asarray(layer.kernel)
    return out + np.asarray(layer.bias) if layer.use_bias else out


def attention(layer, x, mask, alpha):
    """Eq. 7-9: head_h = softmax(Q_h K_hᵀ / √d_k + M_dir + α·M_dis) V_h, Q = K = V = the
    words, each projection normalised per head (Section 5.2), heads joined and projected by
    W^O, then LN. A query that sees no key (the first word forward, padding) outputs 0."""
    b, t, d = x.shape
    k = d // HEADS

    def heads(name):
        projected = dense(x, getattr(layer, f"{name}_dense")).reshape(b, t, HEADS, k)
        return layer_norm(projected, getattr(layer, f"{name}_norm"))

    q, key, v = heads("query"), heads("key"), heads("value")
    i, j = np.indices((t, t))
    direction = j < i if layer.direction == "forward" else j > i  # M_dir: diagonal masked
    visible = direction[None, None] & mask[:, None, None, :] & mask[:, None, :, None]
    logits = np.einsum("bqhk,bthk->bhqt", q, key) / np.sqrt(k) - alpha * np.abs(i - j)
    logits = np.where(visible, logits, -np.inf)
    top = np.max(np.where(visible, logits, -1e30), axis=-1, keepdims=True)
    exp = np.where(visible, np.exp(logits - top), 0.0)
    weights = exp / np.maximum(exp.sum(-1, keepdims=True), 1e-30)
    context = np.einsum("bhqt,bthk->bqhk", weights, v).reshape(b, t, d)
    out = layer_norm(dense(context, layer.output_dense), layer.output_norm)
    return out * visible.any(-1)[:, 0, :, None]


def fusion_gate(layer, s, h):
    """Eq. 11-12: S^F = LN(S W^S), H^F = LN(H W^H), F = σ(S^F + H^F + b^F),
    F ⊙ S^F + (1 − F) ⊙ H^F."""
    s_f = layer_norm(dense(s, layer.source_dense), layer.source_norm)
    h_f = layer_norm(dense(h, layer.context_dense), layer.context_norm)
    gate = 1.0 / (1.0 + np.exp(-(s_f + h_f + np.asarray(layer.gate_bias))))
    return gate * s_f + (1.0 - gate) * h_f


def feed_forward(layer, x):
    """Eq. 13: LN(x + ReLU(x W_1 + b_1) W_2 + b_2)."""
    hidden = np.maximum(dense(x, layer.hidden_dense), 0.0)
    return layer_norm(x + dense(hidden, layer.output_dense), layer.output_norm)


def block(layer, x, mask):
    """A block: attention, the fusion gate on the block's input and the attention's output,
    the feed-forward layer (Figure 2)."""
    h = attention(layer.attention, x, mask, layer.distance_alpha)
    return feed_forward(layer.feed_forward, fusion_gate(layer.fusion_gate, x, h))


@pytest.fixture
def encoder():
    """The paper's encoder at a small width, every weight random (γ and β included)."""
    keras.utils.set_random_seed(3)
    made_encoder = made(dsan.DSANEncoder, num_heads=HEADS, ffn_dim=2 * WIDTH)
    made_encoder.build((None, None, WIDTH))
    rng = np.random.default_rng(5)
    for variable in made_encoder.weights:
        variable.assign(rng.normal(0.0, 0.5, size=variable.shape).astype("float32"))
    return made_encoder


@pytest.fixture
def inputs():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(3, 6, WIDTH)).astype("float32")
    mask = np.ones((3, 6), bool)
    mask[1, 4:] = mask[2, 1:] = False  # padding, and a one-word sentence
    return x, mask


def test_a_block_computes_the_papers_equations(encoder, inputs):
    """Each direction's block, called alone, computes eq. 7-13."""
    x, mask = inputs
    for layer in (encoder.forward_block, encoder.backward_block):
        got = np.asarray(layer(x, padding_mask=mask))
        np.testing.assert_allclose(got, block(layer, x, mask), atol=2e-4, err_msg=layer.name)


def test_both_directions_together_compute_the_papers_equations(encoder, inputs):
    """The two blocks as one pass of ops (what the encoder runs) compute each direction's
    eq. 7-13, in the order [forward, backward]."""
    x, mask = inputs
    got = np.asarray(encoder.forward_block(x, padding_mask=mask,
                                           partners=(encoder.backward_block,)))
    assert got.shape == (2, 3, 6, WIDTH)
    for index, layer in enumerate((encoder.forward_block, encoder.backward_block)):
        np.testing.assert_allclose(got[index], block(layer, x, mask), atol=2e-4,
                                   err_msg=layer.name)
