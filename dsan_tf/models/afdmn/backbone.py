"""The AF-DMN backbone (Duan et al., 2018), a joint (pair-in) model with BiLSTMs.

Shape legend: B batch, T1 premise tokens, T2 hypothesis tokens, D word width, h the LSTM
and MLP width (the paper: 300), k computational blocks.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks
from dsan_tf.models.afdmn.config import INITIALIZATIONS, AFDMNConfig
from dsan_tf.models.afdmn.layers import ComputationalBlock, ESIMInitializer, bilstm
from dsan_tf.models.backbone import PairBackbone
from dsan_tf.models.config import field_defaults

SIDES = ("premise", "hypothesis")


def initializer(initialization, scale):
    """The starting weights of AF-DMN's encoder and blocks: "esim", as the reference code
    the paper links (Section 5.7; `ESIMInitializer`: orthogonal square and recurrent
    blocks, N(0, s²) the rest); "uniform", Section 5.2 read literally (U(−s, s)
    everything, recurrent kernels included; at 25k pairs it does not learn); "glorot",
    Keras' Glorot uniform for every kernel, recurrent ones included."""
    if initialization == "esim":
        return ESIMInitializer(scale)
    if initialization == "uniform":
        return keras.initializers.RandomUniform(-scale, scale)
    if initialization == "glorot":
        return keras.initializers.GlorotUniform()
    raise ValueError(f"initialization must be one of {INITIALIZATIONS}, got "
                     f"{initialization!r}.")


# The constructor's defaults are the configuration's (declared once, in AFDMNConfig).
DEFAULTS = field_defaults(AFDMNConfig)

@keras.saving.register_keras_serializable(package="dsan_tf")
class AFDMNBackbone(PairBackbone):
    """Token ids of both sentences -> V = [mean(V_p); max(V_p); mean(V_q); max(V_q)]
    (eq. (5)-(7)), the input of the prediction MLP (eq. (8)).

    Word embedding (trainable GloVe in the paper) with dropout -> one BiLSTM encoder for
    both sentences (eq. (2)-(3)) -> k computational blocks (Section 3) -> mean and max
    pooling over each sentence's real words.

    Args:
        vocabulary_size: int, V.
        embedding_dim: D.
        lstm_units: h (300): LSTM width per direction and MLP width.
        matching_blocks: k (3 for SNLI, 2 for MultiNLI).
        dropout: on the word embeddings and every MLP's input (0.2).
        initialization: how the encoder's and blocks' weights start, one of
            `INITIALIZATIONS` (`initializer`): "esim" (ESIM's reference code, the paper's
            link, Section 5.7), "uniform" (Section 5.2 literally: U(-s, s)) or "glorot".
        init_scale: s, ESIM's N(0, s²) and the literal U(-s, s) (Section 5.2: 0.01).
        trainable_embeddings: bool (the paper: True).

    Call arguments:
        inputs: {"premise": int [B, T1], "hypothesis": int [B, T2]}, 0 padding.
        training: bool.

    Returns:
        float [B, 8h].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.afdmn import AFDMNBackbone

    backbone = AFDMNBackbone(vocabulary_size=100, embedding_dim=8, lstm_units=4,
                             matching_blocks=1)
    pair = {"premise": np.array([[4, 5, 6, 0]]), "hypothesis": np.array([[7, 8, 0, 0]])}
    features = backbone(pair)  # [1, 32]: mean and max of each sentence, 8 h
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=DEFAULTS.embedding_dim,
                 lstm_units=DEFAULTS.lstm_units, matching_blocks=DEFAULTS.matching_blocks,
                 dropout=DEFAULTS.dropout, initialization=DEFAULTS.initialization,
                 init_scale=DEFAULTS.init_scale,
                 trainable_embeddings=DEFAULTS.trainable_embeddings, **kwargs):
        super().__init__(vocabulary_size, embedding_dim, trainable_embeddings, **kwargs)
        self.lstm_units, self.matching_blocks = lstm_units, matching_blocks
        self.dropout = dropout
        units = lstm_units
        self.initialization, self.init_scale = initialization, init_scale
        start = initializer(initialization, init_scale)
        self._make_token_embedding()
        self.embedding_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.encoder = bilstm(units, "encoder_bilstm", self.dtype_policy, start)
        self.blocks = [ComputationalBlock(units, dropout, kernel_initializer=start,
                                          name=f"block_{i}", dtype=self.dtype_policy)
                       for i in range(matching_blocks)]

    def build(self, inputs_shape=None):
        # Built here in call order, not by Keras running `call` symbolically: the variables
        # such a run creates are placeholders whose every read runs the initializer again
        # (ESIM's orthogonal blocks: a QR decomposition a read, 56 LSTM steps): 11 s to
        # build a tiny AF-DMN that way, 0.5 s this way, the same weights.
        states = (None, None, 2 * self.lstm_units)
        self.token_embedding.build()
        self.encoder.build((None, None, self.embedding_dim))
        for block in self.blocks:
            block.build(states, states)
        self.built = True

    @property
    def output_dim(self):
        return 8 * self.lstm_units

    def call(self, inputs, training=None):
        return self.pair_intermediates(inputs, training=training)["features"]

    def pair_intermediates(self, inputs, training=False):
        """{"features" [B, 8h], "attention": a list of {"block", "kind", "weights"
        [B, 1, Tq, Tk]} in depth order: cross attention both ways and self-attention}."""
        real = {side: masks.padding_mask(inputs[side]) for side in SIDES}
        states = {}
        for side in SIDES:
            embedded = self.embedding_dropout(self.token_embedding(inputs[side]),
                                              training=training)
            states[side] = self.encoder(embedded, mask=real[side], training=training)
        attention = []
        for block in self.blocks:
            states["premise"], states["hypothesis"], weights = block(
                states["premise"], states["hypothesis"], real["premise"],
                real["hypothesis"], training=training, return_attention_scores=True)
            # One "head": the same layout as the Gaussian Transformer's maps.
            attention += [{"block": block.name, "kind": kind, "weights": value[:, None]}
                          for kind, value in weights.items()]
        pooled = []
        for side in SIDES:
            weight = ops.cast(real[side], states[side].dtype)[:, :, None]
            mean = (ops.sum(states[side] * weight, axis=1)
                    / ops.maximum(ops.sum(weight, axis=1), 1.0))
            largest = ops.max(ops.where(weight > 0, states[side], -1e4), axis=1)
            pooled += [mean, largest]
        return {"features": ops.concatenate(pooled, axis=-1), "attention": attention}

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape["premise"][0], self.output_dim)

    def _parts(self):
        return [("encoder_bilstm", self.encoder),
                *[(block.name, block) for block in self.blocks]]

    def get_config(self):
        return dict(super().get_config(), lstm_units=self.lstm_units,
                    matching_blocks=self.matching_blocks, dropout=self.dropout,
                    initialization=self.initialization, init_scale=self.init_scale)

    @classmethod
    def from_config(cls, config):
        # `.keras` files saved before the constructor took the config's names.
        renamed = {"units": "lstm_units", "num_blocks": "matching_blocks"}
        return super().from_config({renamed.get(key, key): value
                                    for key, value in config.items()})
