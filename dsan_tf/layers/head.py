"""The classifier on top of the encoders (Im & Cho, 2017, Section 4.1): the matching
features of two sentence vectors, and the MLP that turns features into class logits.

Shape legend: B batch, E sentence-vector width, F feature width, C classes.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.utils import initialized_dense


@keras.saving.register_keras_serializable(package="dsan_tf")
class MatchingFeatures(keras.layers.Layer):
    """[u; v; |u - v|; u * v] (Section 4.1), the input of the classifier of a sentence-
    encoder model.

    Call arguments:
        premise: float [B, E], u.
        hypothesis: float [B, E], v.

    Returns:
        float [B, 4E].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import MatchingFeatures

    u, v = np.random.rand(2, 2, 8).astype("float32")
    features = MatchingFeatures()(u, v)  # [2, 32]
    ```
    """

    def call(self, premise, hypothesis):
        return ops.concatenate(
            [premise, hypothesis, ops.abs(premise - hypothesis), premise * hypothesis], axis=-1)

    def get_config(self):
        # Written out: built with the backbone's dtype policy (an object), Keras' automatic
        # config refuses it, and `keras.models.clone_model` with it.
        return super().get_config()

    def compute_output_shape(self, premise_shape, hypothesis_shape=None):
        return (premise_shape[0], 4 * premise_shape[-1])


@keras.saving.register_keras_serializable(package="dsan_tf")
class StackPair(keras.layers.Layer):
    """Premise and hypothesis ids as one batch, each padded (0) to the longer length, so
    that one pass of the sentence encoder reads both: one copy of the encoder in the
    compiled program instead of two (about half the program: a GPU's step is bound by its
    size), at the cost of the shorter side's padded tokens (`SplitPair` undoes it).

    Call arguments:
        premise: int [B, T1].
        hypothesis: int [B, T2].

    Returns:
        int [2B, max(T1, T2)]: the premises, then the hypotheses.
    """

    def call(self, premise, hypothesis):
        lengths = ops.shape(premise)[1], ops.shape(hypothesis)[1]
        longest = max(lengths) if all(isinstance(n, int) for n in lengths) else \
            ops.maximum(*lengths)
        return ops.concatenate([ops.pad(ids, [[0, 0], [0, longest - length]]) for ids, length
                                in ((premise, lengths[0]), (hypothesis, lengths[1]))], axis=0)

    def compute_output_shape(self, premise_shape, hypothesis_shape=None):
        batch = None if premise_shape[0] is None else 2 * premise_shape[0]
        lengths = (premise_shape[1], (hypothesis_shape or premise_shape)[1])
        return (batch, None if None in lengths else max(lengths))


@keras.saving.register_keras_serializable(package="dsan_tf")
class SplitPair(keras.layers.Layer):
    """The sentence vectors of a `StackPair` batch, split back into premise and hypothesis.

    Call arguments:
        vectors: float [2B, E].

    Returns:
        (float [B, E], float [B, E]): u, v.
    """

    def call(self, vectors):
        return tuple(ops.split(vectors, 2, axis=0))

    def compute_output_shape(self, vectors_shape):
        batch = None if vectors_shape[0] is None else vectors_shape[0] // 2
        return ((batch, vectors_shape[-1]), (batch, vectors_shape[-1]))


@keras.saving.register_keras_serializable(package="dsan_tf")
class ClassificationHead(keras.layers.Layer):
    """Dense(hidden) -> LN -> ReLU -> dropout -> Dense(C) (Section 4.1).

    Section 4.1 names layer normalization and dropout on the 300-d ReLU layer only.
    Dropout on the input features (common in other NLI models, SAN4NLI's) is off by
    default; it cost 1.0-1.6 points of SNLI dev at the 25k data (docs/FIDELITY.md,
    "Measured choices"); DSAN's `classifier_input_dropout` sets it.

    Args:
        hidden_units: int (the paper: 300).
        num_classes: int, C (3 for NLI).
        dropout: float, on the hidden layer.
        input_dropout: float, on the input features (the paper: none).
        layer_norm_epsilon: float.
        hidden_layer_norm: LayerNorm on the hidden layer (DSAN, Section 5.2: on every
            linear projection); the Gaussian Transformer's eq. (16) has none.
        activation: of the hidden layer: "relu" (DSAN, Gaussian Transformer) or "tanh"
            (AF-DMN, eq. (8)).
        kernel_initializer: initializer of both dense layers.
        initialization: `"glorot"` or `"san4nli"` (`dense_initializers`).

    Call arguments:
        features: float [B, F], e.g. `MatchingFeatures`' [u; v; |u - v|; u * v].
        training: bool.

    Returns:
        float32 logits [B, C] (float32 also under mixed precision, for a stable loss).

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import ClassificationHead

    features = np.random.rand(2, 32).astype("float32")  # [u; v; |u - v|; u * v]
    head = ClassificationHead(hidden_units=16, num_classes=3, dropout=0.1,
                              input_dropout=0.0, layer_norm_epsilon=1e-5,
                              hidden_layer_norm=True, activation="relu",
                              initialization="glorot")
    logits = head(features)  # [2, 3]
    ```
    """

    def __init__(self, hidden_units, num_classes, dropout, input_dropout, layer_norm_epsilon,
                 hidden_layer_norm, activation, initialization,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.activation = activation
        self.hidden_units = hidden_units
        self.hidden_layer_norm = hidden_layer_norm
        self.num_classes = num_classes
        self.dropout = dropout
        self.input_dropout_rate = input_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.initialization = initialization

    def build(self, features_shape):
        hidden_shape = (features_shape[0], self.hidden_units)
        self.input_dropout = keras.layers.Dropout(self.input_dropout_rate,
                                                  dtype=self.dtype_policy)
        self.hidden_dense = initialized_dense(self.hidden_units, "classifier_hidden", self,
                                              features_shape[-1])
        self.hidden_dense.build(features_shape)
        self.hidden_norm = None
        if self.hidden_layer_norm:
            self.hidden_norm = LayerNorm(
                epsilon=self.layer_norm_epsilon, name="classifier_hidden_norm",
                dtype=self.dtype_policy)
            self.hidden_norm.build(hidden_shape)
        self.hidden_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.logits_dense = initialized_dense(self.num_classes, "classifier_logits", self,
                                              self.hidden_units, dtype="float32")
        self.logits_dense.build(hidden_shape)
        self.built = True

    def call(self, features, training=None):
        hidden = self.hidden_dense(self.input_dropout(features, training=training))
        if self.hidden_norm is not None:
            hidden = self.hidden_norm(hidden)
        hidden = ops.tanh(hidden) if self.activation == "tanh" else ops.relu(hidden)
        return self.logits_dense(self.hidden_dropout(hidden, training=training))

    def compute_output_shape(self, features_shape):
        return (features_shape[0], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_units": self.hidden_units,
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "input_dropout": self.input_dropout_rate,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "hidden_layer_norm": self.hidden_layer_norm,
            "activation": self.activation,
            "initialization": self.initialization,
        })
        return config
