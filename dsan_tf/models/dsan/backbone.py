"""The DSAN sentence encoder and its backbone (Im & Cho, 2017, Section 4.2, Figure 2): word
embedding -> forward and backward DSAN blocks -> source2token attention and max pooling ->
sentence vector. `DSANEncoder` is the sentence encoder on word vectors; `DSANBackbone` adds
the word embedding.

Shape legend: B batch, T tokens, D word width (d_e), H heads, F FFN hidden width,
E sentence-vector width (4·d_e).
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks
from dsan_tf.layers.pooling import MaskedMaxPooling, Source2TokenAttention
from dsan_tf.layers.utils import clone_initializer
from dsan_tf.models.backbone import SentenceEncoderBackbone
from dsan_tf.models.config import field_defaults
from dsan_tf.models.dsan.block import DSANBlock
from dsan_tf.models.dsan.config import POOLINGS, DSANConfig


@keras.saving.register_keras_serializable(package="dsan_tf")
class DSANEncoder(keras.layers.Layer):
    """Forward block + backward block + pooling -> one vector per sentence.

    U = [U_fw; U_bw] (B, T, 2D); the sentence vector is
    `pooling="multi_dim_max"`: [source2token(U); max(U)]  (B, 4D), the paper;
    `pooling="multi_dim"`:     source2token(U)            (B, 2D);
    `pooling="max"`:           max(U)                     (B, 2D).
    The forward and backward blocks have separate weights; they are computed as one pass
    of ops, their weights stacked at run time (`DSANBlock.call` with `partners`): the values each
    block computes alone, with one dropout draw for both.

    Args:
        num_heads, ffn_dim, use_direction_mask, distance_prior, distance_alpha,
            prior_max_distance, fusion, qkv_norm, dropout, layer_norm_epsilon,
            attention_scale, fusion_norm, fusion_output_norm, ffn_dropout, initialization,
            kernel_initializer: passed to both `DSANBlock` blocks (`initialization` and
            `kernel_initializer` also to source2token).
        pooling: one of `POOLINGS`.
        s2t_norm: `"separate"` or `"shared"` (`Source2TokenAttention`'s `shared_norm`).
        max_pool_padding: `"masked"` or `"zeros"` (`MaskedMaxPooling`'s `padding`).

    Call arguments:
        inputs: float [B, T, D], word embeddings.
        padding_mask: optional bool [B, T], True on real tokens.
        training: bool.
        return_intermediates: bool; also return a dict with `forward` and `backward`
            (each the block's intermediates plus `output` [B, T, D]), `encoded` U
            [B, T, 2D] and, when used, `s2t_weights` [B, T, 2D].

    Returns:
        float [B, output_dim].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.backbone import arguments_of
    from dsan_tf.models.dsan import DSANEncoder
    from dsan_tf.models.dsan.config import DSANConfig

    # The paper's values (DSANConfig's defaults), two heads and a 16-wide FFN.
    config = DSANConfig(num_heads=2, ffn_dim=16)
    encoder = DSANEncoder(**arguments_of(DSANEncoder, config))
    x = np.random.rand(2, 5, 8).astype("float32")  # B 2, T 5, D 8
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    vectors = encoder(x, padding_mask=mask)  # [2, 32]
    ```
    """

    def __init__(self, num_heads, ffn_dim, use_direction_mask, distance_prior,
                 distance_alpha, prior_max_distance, fusion, pooling, qkv_norm, dropout,
                 layer_norm_epsilon, attention_scale, fusion_norm, fusion_output_norm,
                 ffn_dropout, s2t_norm, max_pool_padding, initialization,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}.")
        self.num_heads = num_heads
        self.ffn_dim = ffn_dim
        self.use_direction_mask = use_direction_mask
        self.distance_prior = distance_prior
        self.distance_alpha = distance_alpha
        self.prior_max_distance = prior_max_distance
        self.fusion = fusion
        self.pooling = pooling
        self.qkv_norm = qkv_norm
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.attention_scale = attention_scale
        self.fusion_norm = fusion_norm
        self.fusion_output_norm = fusion_output_norm
        self.ffn_dropout = ffn_dropout
        self.s2t_norm = s2t_norm
        self.max_pool_padding = max_pool_padding
        self.initialization = initialization

    def _block_config(self):
        """The blocks' arguments, passed through unchanged (their direction and initializer
        are set per block)."""
        return dict(
            num_heads=self.num_heads, ffn_dim=self.ffn_dim,
            use_direction_mask=self.use_direction_mask, distance_prior=self.distance_prior,
            distance_alpha=self.distance_alpha, prior_max_distance=self.prior_max_distance,
            fusion=self.fusion, qkv_norm=self.qkv_norm, dropout=self.dropout,
            layer_norm_epsilon=self.layer_norm_epsilon, attention_scale=self.attention_scale,
            fusion_norm=self.fusion_norm, fusion_output_norm=self.fusion_output_norm,
            ffn_dropout=self.ffn_dropout, initialization=self.initialization)

    def build(self, inputs_shape):
        initializer = lambda name: clone_initializer(self.kernel_initializer, name)  # noqa: E731
        self.forward_block = DSANBlock(
            "forward", name="forward_block", dtype=self.dtype_policy,
            kernel_initializer=initializer("forward_block"), **self._block_config())
        self.backward_block = DSANBlock(
            "backward", name="backward_block", dtype=self.dtype_policy,
            kernel_initializer=initializer("backward_block"), **self._block_config())
        self.forward_block.build(inputs_shape)
        self.backward_block.build(inputs_shape)
        encoded_shape = tuple(inputs_shape[:-1]) + (2 * inputs_shape[-1],)
        self.source2token = None
        self.max_pooling = None
        if self.pooling in ("multi_dim_max", "multi_dim"):
            self.source2token = Source2TokenAttention(
                layer_norm_epsilon=self.layer_norm_epsilon, name="source2token",
                shared_norm=self.s2t_norm == "shared", initialization=self.initialization,
                kernel_initializer=initializer("source2token"), dtype=self.dtype_policy)
            self.source2token.build(encoded_shape)
        if self.pooling in ("multi_dim_max", "max"):
            self.max_pooling = MaskedMaxPooling(padding=self.max_pool_padding,
                                                name="max_pooling", dtype=self.dtype_policy)
            # Built now though it has no weights: Keras' `predict` on JAX runs a model
            # with an unbuilt layer eagerly once to build it (16 s of op compiles for
            # SNLI dev's first batch, records/runs/text_predict_snli_dev.json).
            self.max_pooling.build(encoded_shape)
        self.built = True

    def output_dim(self, input_dim):
        """Width of the sentence vector for word vectors of width `input_dim`."""
        return (4 if self.pooling == "multi_dim_max" else 2) * input_dim

    def call(self, inputs, padding_mask=None, training=None, return_intermediates=False):
        # Both directions in one pass of ops (their weights stacked at run time): a
        # compiled step holds the block once.
        outputs, stacked = self.forward_block(
            inputs, padding_mask=padding_mask, training=training, return_intermediates=True,
            partners=(self.backward_block,))
        # Unstacked, not indexed: the gradient of `outputs[i]` in TensorFlow's graph fills
        # a zero tensor of both directions per slice (StridedSliceGrad): 0-5% of the CPU's
        # gradient at d_e 300, measured on a 2-core Xeon (2026-11-27).
        # The intermediates are sliced only when asked for.
        directions = ops.unstack(outputs, 2)
        encoded = ops.concatenate(directions, axis=-1)
        info = {}
        if return_intermediates:
            info = {side: dict({name: value[index] for name, value in stacked.items()},
                               output=directions[index])
                    for index, side in enumerate(("forward", "backward"))}
            info["encoded"] = encoded
        pooled = []
        if self.source2token is not None:
            vector, info["s2t_weights"] = self.source2token(
                encoded, padding_mask=padding_mask, return_attention_scores=True)
            pooled.append(vector)
        if self.max_pooling is not None:
            pooled.append(self.max_pooling(encoded, padding_mask=padding_mask))
        outputs = ops.concatenate(pooled, axis=-1) if len(pooled) > 1 else pooled[0]
        if return_intermediates:
            return outputs, info
        return outputs

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], self.output_dim(inputs_shape[-1]))

    def get_config(self):
        config = super().get_config()
        config.update(self._block_config())
        config["pooling"] = self.pooling
        config["s2t_norm"] = self.s2t_norm
        config["max_pool_padding"] = self.max_pool_padding
        config["kernel_initializer"] = keras.initializers.serialize(self.kernel_initializer)
        return config


# The constructor's defaults are the configuration's (declared once, in DSANConfig).
DEFAULTS = field_defaults(DSANConfig)

@keras.saving.register_keras_serializable(package="dsan_tf")
class DSANBackbone(SentenceEncoderBackbone):
    """DSAN's sentence encoder with its word embedding; defaults are the paper's
    (Section 5.2: d_e 300, h 5, α 1.5, dropout 0.1; Section 4.2.4: d_ff = 4·d_e).

    Args:
        vocabulary_size: int, V.
        embedding_dim: d_e (300).
        num_heads: h (5).
        ffn_dim: d_ff (1200).
        distance_prior, distance_alpha, prior_max_distance, use_direction_mask, fusion,
            pooling, qkv_norm, dropout, layer_norm_epsilon: see `dsan_tf.DSANConfig`.
        attention_scale, fusion_norm, fusion_output_norm, ffn_dropout, s2t_norm,
            max_pool_padding, initialization: SAN4NLI-pytorch's departures, off by
            default (`dsan_tf.DSANConfig`, docs/FIDELITY.md#san4nli).
        trainable_embeddings: bool (False: the paper's frozen GloVe).

    Call arguments:
        token_ids: int [B, T], 0 padding.
        training: bool.

    Returns:
        float [B, E], E = 4·d_e with the paper's pooling.

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.dsan import DSANBackbone

    backbone = DSANBackbone(vocabulary_size=100, embedding_dim=8, num_heads=2, ffn_dim=16)
    vectors = backbone(np.array([[4, 5, 6, 0]]))  # [1, 32]: 4 d_e a sentence
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=DEFAULTS.embedding_dim,
                 num_heads=DEFAULTS.num_heads, ffn_dim=DEFAULTS.ffn_dim,
                 distance_prior=DEFAULTS.distance_prior,
                 distance_alpha=DEFAULTS.distance_alpha,
                 prior_max_distance=DEFAULTS.prior_max_distance,
                 use_direction_mask=DEFAULTS.use_direction_mask, fusion=DEFAULTS.fusion,
                 pooling=DEFAULTS.pooling, qkv_norm=DEFAULTS.qkv_norm,
                 dropout=DEFAULTS.dropout, layer_norm_epsilon=DEFAULTS.layer_norm_epsilon,
                 trainable_embeddings=False, attention_scale=DEFAULTS.attention_scale,
                 fusion_norm=DEFAULTS.fusion_norm,
                 fusion_output_norm=DEFAULTS.fusion_output_norm,
                 ffn_dropout=DEFAULTS.ffn_dropout, s2t_norm=DEFAULTS.s2t_norm,
                 max_pool_padding=DEFAULTS.max_pool_padding,
                 initialization=DEFAULTS.initialization, **kwargs):
        super().__init__(vocabulary_size, embedding_dim, trainable_embeddings, **kwargs)
        self.encoder_config = dict(
            num_heads=num_heads, ffn_dim=ffn_dim, distance_prior=distance_prior,
            distance_alpha=distance_alpha, prior_max_distance=prior_max_distance,
            use_direction_mask=use_direction_mask, fusion=fusion, pooling=pooling,
            qkv_norm=qkv_norm, dropout=dropout, layer_norm_epsilon=layer_norm_epsilon,
            attention_scale=attention_scale, fusion_norm=fusion_norm,
            fusion_output_norm=fusion_output_norm, ffn_dropout=ffn_dropout,
            s2t_norm=s2t_norm, max_pool_padding=max_pool_padding,
            initialization=initialization)
        # The encoder is made before the embedding, and both before the task's head: an
        # unseeded initializer takes its seed from Python's random state when it is made,
        # so this order is what makes a seed reproduce the runs of earlier versions.
        self.encoder = DSANEncoder(name="dsan_encoder", dtype=self.dtype_policy,
                                   **self.encoder_config)
        self._make_token_embedding()

    def _parts(self):
        parts = []
        for block in (self.encoder.forward_block, self.encoder.backward_block):
            parts.append((block.name, block))
            for sublayer in (block.attention, block.fusion_gate, block.feed_forward):
                parts.append((f"{block.name}.{sublayer.name}", sublayer))
        if self.encoder.source2token is not None:
            parts.append(("source2token", self.encoder.source2token))
        return parts

    def prior_bias(self, length):
        """The distance prior's bias α·M_dis (eq. (7)'s term, or another prior's, learned
        values included) of each block, for sentences of `length` tokens: {"forward",
        "backward"}: float32 [T, T], before the masks."""
        self.ensure_built()
        distances = masks.distances(length)
        return {block.direction: block.attention.prior(distances)
                for block in (self.encoder.forward_block, self.encoder.backward_block)}

    def visible_keys(self, side, length):
        """bool [T, T]: the keys each query of the `side` ("forward" or "backward") block
        may attend to before padding: its direction's mask, or with
        `use_direction_mask=False` every key but the diagonal."""
        if self.encoder_config["use_direction_mask"]:
            return masks.directional_mask(length, side)
        return masks.off_diagonal_mask(length)

    def sentence_intermediates(self, token_ids):
        """What the encoder computes on the way (for the paper's Figures 7-13).

        Args:
            token_ids: int [B, T].

        Returns:
            dict: `forward`, `backward` (each with `attention_weights` [B, H, T, T],
            `gate` [B, T, D], `ffn_hidden` [B, T, F], `output` [B, T, D]), `encoded`
            U = [U_fw; U_bw] [B, T, 2D] and, with source2token pooling, `s2t_weights`
            [B, T, 2D]; inference mode (no dropout).
        """
        self.ensure_built()
        vectors = self.token_embedding(token_ids)
        _, info = self.encoder(vectors, padding_mask=masks.padding_mask(token_ids),
                               training=False, return_intermediates=True)
        return info

    def get_config(self):
        return dict(super().get_config(), **self.encoder_config)
