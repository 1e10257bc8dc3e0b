"""The matching layer of AF-DMN (Duan et al., 2018, Section 3): cross attention (eq. (9)-(11)),
fusion (eq. (12)-(14) and (17)-(19)), self-attention (eq. (15)-(16)), stacked in
computational blocks.

Shape legend: B batch, T1 premise (p) tokens, T2 hypothesis (q) tokens, D = 2h the width of
every BiLSTM output, U the MLP width.
"""

import random

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks
from dsan_tf.layers.recurrent import bidirectional_lstm
from dsan_tf.layers.utils import clone_initializer


def masked_softmax(logits, visible, axis=-1):
    """Softmax over `axis` where `visible` is True; float32, rows without a visible key 0."""
    logits = ops.where(visible, ops.cast(logits, "float32"), masks.LARGE_NEGATIVE)
    weights = masks.softmax(logits, axis=axis)
    return weights * ops.cast(visible, "float32")


@keras.saving.register_keras_serializable(package="dsan_tf")
class ESIMInitializer(keras.initializers.Initializer):
    """ESIM's reference initialisation (Chen et al. 2017, github.com/lukecq1231/nli,
    `scripts/ESIM/main.py`: `norm_weight`, `param_init_lstm`, `param_init_fflayer`), the
    code AF-DMN links (Section 5.7, footnote 2): a matrix [n_in, n_out] is cut into
    `gates` column blocks [n_in, n_out / gates]; a square block starts orthogonal, any
    other N(0, s²).
    `gates=0` (ESIM's feed-forward layers, `ortho=False`): N(0, s²) throughout. An LSTM's
    input and recurrent kernels use `gates=4`, one block per gate, so its h×h recurrent
    blocks are always orthogonal. Vectors start N(0, s²).

    Args:
        scale: s, the standard deviation of the Gaussian blocks (`init_scale`).
        gates: column blocks, each orthogonal when square (0: none).
        seed: int or None.
    """

    def __init__(self, scale, gates=0, seed=None):
        self.scale, self.gates, self._seed = scale, gates, seed
        # As Keras' own initializers: an unseeded one draws its seed once (from Python's
        # generator, which `keras.utils.set_random_seed` seeds), so the same instance
        # gives the same values; `clone_initializer` gives each weight a fresh one.
        self.seed = seed if seed is not None else random.randint(1, int(1e9))

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        gaussian = lambda seed: keras.initializers.RandomNormal(  # noqa: E731
            stddev=self.scale, seed=seed)
        if len(shape) != 2 or not self.gates:
            return gaussian(self.seed)(shape, dtype=dtype)
        rows, columns = shape
        width = columns // self.gates
        if width * self.gates != columns:
            raise ValueError(f"{columns} columns do not split into {self.gates} gate blocks.")
        blocks = [(keras.initializers.Orthogonal(seed=self.seed + gate) if rows == width
                   else gaussian(self.seed + gate))((rows, width), dtype=dtype)
                  for gate in range(self.gates)]
        return ops.concatenate(blocks, axis=1)

    def get_config(self):
        return {"scale": self.scale, "gates": self.gates, "seed": self._seed}


def bilstm(units, name, dtype, initializer):
    """A BiLSTM returning every step, [B, T, 2·units] (eq. (2)-(3), (14), (19)); its input
    and recurrent kernels start from `initializer`, per gate when it is ESIM's."""
    def start(salt):
        fresh = clone_initializer(initializer, f"{name}_{salt}")
        if isinstance(fresh, ESIMInitializer):  # Keras' LSTM kernels are 4 gates wide
            # The unseeded stay unseeded: Bidirectional builds the backward LSTM from the
            # forward one's config, which must not fix the seed both then draw from.
            fresh = ESIMInitializer(fresh.scale, gates=4, seed=fresh.get_config()["seed"])
        return fresh

    return bidirectional_lstm(units, name, dtype, kernel_initializer=start("kernel"),
                              recurrent_initializer=start("recurrent"))


@keras.saving.register_keras_serializable(package="dsan_tf")
class CrossAttention(keras.layers.Layer):
    """A_ij = h_pi W h_qj + <U_l, h_pi> + <U_r, h_qj>   (eq. (9)); each p word attends over q
    (rows, eq. (10)) and each q word over p (columns); h̃ = the attended sum (eq. (11)).
    Padded words are never attended to.

    Call arguments:
        premise: float [B, T1, D]; hypothesis: float [B, T2, D].
        premise_mask: bool [B, T1]; hypothesis_mask: bool [B, T2].
        return_attention_scores: bool; also return A's softmaxes ([B, T1, T2], [B, T2, T1]).

    Returns:
        (h̃_p [B, T1, D], h̃_q [B, T2, D]).
    """

    def __init__(self, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # the masks are explicit arguments
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, premise_shape, hypothesis_shape=None, *args):
        width = premise_shape[-1]
        self.bilinear = self.add_weight(
            name="bilinear", shape=(width, width),
            initializer=clone_initializer(self.kernel_initializer, "bilinear"))
        self.left = self.add_weight(name="left", shape=(width,),
                                    initializer=clone_initializer(self.kernel_initializer, "l"))
        self.right = self.add_weight(name="right", shape=(width,),
                                     initializer=clone_initializer(self.kernel_initializer, "r"))
        self.built = True

    def call(self, premise, hypothesis, premise_mask, hypothesis_mask,
             return_attention_scores=False):
        scores = ops.einsum("bid,de,bje->bij", premise, self.bilinear, hypothesis)
        scores = (scores + ops.einsum("bid,d->bi", premise, self.left)[:, :, None]
                  + ops.einsum("bjd,d->bj", hypothesis, self.right)[:, None, :])
        p_mask = ops.cast(premise_mask, "bool")
        q_mask = ops.cast(hypothesis_mask, "bool")
        to_q = masked_softmax(scores, q_mask[:, None, :], axis=-1)             # [B, T1, T2]
        to_p = masked_softmax(ops.transpose(scores, (0, 2, 1)), p_mask[:, None, :], axis=-1)
        aligned_p = ops.einsum("bij,bjd->bid", ops.cast(to_q, hypothesis.dtype), hypothesis)
        aligned_q = ops.einsum("bji,bid->bjd", ops.cast(to_p, premise.dtype), premise)
        if return_attention_scores:
            return aligned_p, aligned_q, to_q, to_p
        return aligned_p, aligned_q

    def get_config(self):
        config = super().get_config()
        config["kernel_initializer"] = keras.initializers.serialize(self.kernel_initializer)
        return config


class _MatchingLayer(keras.layers.Layer):
    """What the fusion and the computational block share: h (`units`), the dropout on the
    fusion MLPs' inputs and the initializer, stored and round-tripped by `get_config`."""

    def __init__(self, units, dropout, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # the masks are explicit arguments
        self.units = units
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "dropout": self.dropout,
                       "kernel_initializer": keras.initializers.serialize(
                           self.kernel_initializer)})
        return config


@keras.saving.register_keras_serializable(package="dsan_tf")
class AttentionFusion(_MatchingLayer):
    """f = BiLSTM(ReLU(W [x; x̃; x − x̃; x ⊙ x̃] + b))   (eq. (12)-(14), and (17)-(19) after
    self-attention), dropout on the MLP's input (Section 5.2: "all MLPs").

    Args:
        units: h, the MLP width and the BiLSTM's per direction (the paper: 300).
        dropout: float.
        kernel_initializer: initializer of W and the BiLSTM kernels.

    Call arguments:
        inputs: float [B, T, D]; aligned: float [B, T, D]; padding_mask: bool [B, T].
        training: bool.

    Returns:
        float [B, T, 2·units].
    """


    def build(self, inputs_shape, aligned_shape=None, padding_mask_shape=None):
        features = tuple(inputs_shape[:-1]) + (4 * inputs_shape[-1],)
        self.input_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.mlp = keras.layers.Dense(
            self.units, activation="relu", name="fusion_mlp", dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, "fusion_mlp"))
        self.mlp.build(features)
        self.recurrent = bilstm(self.units, "fusion_bilstm", self.dtype_policy,
                                self.kernel_initializer)
        self.recurrent.build(tuple(inputs_shape[:-1]) + (self.units,))
        self.built = True

    def call(self, inputs, aligned, padding_mask, training=None):
        features = ops.concatenate([inputs, aligned, inputs - aligned, inputs * aligned], -1)
        hidden = self.mlp(self.input_dropout(features, training=training))
        return self.recurrent(hidden, mask=ops.cast(padding_mask, "bool"), training=training)

    def compute_output_shape(self, inputs_shape, aligned_shape=None, padding_mask_shape=None):
        return tuple(inputs_shape[:-1]) + (2 * self.units,)


@keras.saving.register_keras_serializable(package="dsan_tf")
class ComputationalBlock(_MatchingLayer):
    """One block of the deep matching layer (Section 3): cross attention, fusion, self-
    attention S = F Fᵀ (eq. (15)-(16), no parameters), fusion. One set of weights for both
    sentences; each block has its own.

    Args:
        units: h (300).
        dropout: on the fusion MLPs' inputs (0.2).
        kernel_initializer: initializer.

    Call arguments:
        premise: float [B, T1, D]; hypothesis: float [B, T2, D] (D = 2·units).
        premise_mask, hypothesis_mask: bool.
        training: bool.
        return_attention_scores: bool; also return {"premise_to_hypothesis",
            "hypothesis_to_premise", "premise_self", "hypothesis_self"}.

    Returns:
        (H_p^t [B, T1, D], H_q^t [B, T2, D]).
    """


    def build(self, premise_shape, hypothesis_shape=None, *args):
        def fusion(name):
            layer = AttentionFusion(self.units, self.dropout, name=name, dtype=self.dtype_policy,
                                    kernel_initializer=clone_initializer(
                                        self.kernel_initializer, name))
            layer.build(tuple(premise_shape[:-1]) + (2 * self.units,))
            return layer

        self.cross_attention = CrossAttention(
            name="cross_attention", dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, "cross_attention"))
        self.cross_attention.build(premise_shape)
        self.cross_fusion = fusion("cross_fusion")
        self.self_fusion = fusion("self_fusion")
        self.built = True

    def _self_attention(self, fused, padding_mask):
        scores = ops.einsum("bid,bjd->bij", fused, fused)
        weights = masked_softmax(scores, ops.cast(padding_mask, "bool")[:, None, :])
        return ops.einsum("bij,bjd->bid", ops.cast(weights, fused.dtype), fused), weights

    def call(self, premise, hypothesis, premise_mask, hypothesis_mask, training=None,
             return_attention_scores=False):
        weights = {}
        aligned_p, aligned_q, weights["premise_to_hypothesis"], \
            weights["hypothesis_to_premise"] = self.cross_attention(
                premise, hypothesis, premise_mask, hypothesis_mask,
                return_attention_scores=True)
        outputs = []
        for side, x, aligned, mask in (("premise", premise, aligned_p, premise_mask),
                                       ("hypothesis", hypothesis, aligned_q, hypothesis_mask)):
            fused = self.cross_fusion(x, aligned, mask, training=training)
            attended, weights[f"{side}_self"] = self._self_attention(fused, mask)
            outputs.append(self.self_fusion(fused, attended, mask, training=training))
        return (*outputs, weights) if return_attention_scores else tuple(outputs)

    def compute_output_shape(self, premise_shape, hypothesis_shape=None, *args):
        width = 2 * self.units
        return (tuple(premise_shape[:-1]) + (width,), tuple(hypothesis_shape[:-1]) + (width,))
