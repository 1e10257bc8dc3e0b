"""What every model family's backbone shares: token ids in, features out, its own word
embedding, and the questions callers may ask of it (size, parts). A family whose backbone
shows its intermediate values defines them itself (`sentence_intermediates`,
`pair_intermediates`: `dsan_tf.evaluation.analysis`).

Shape legend: B batch, T tokens, V vocabulary, D word width (d_e), E backbone output width.
"""

import dataclasses
import inspect

from dsan_tf.common.frameworks import keras, ops
import numpy as np

from dsan_tf.layers import masks


def arguments_of(callable_, values):
    """{name: value} of `values` (a dict, or a dataclass such as a family's configuration)
    that `callable_` (a class: its constructor) takes by name: a hyperparameter passed on
    under its one name, with no list of names to keep beside it."""
    if dataclasses.is_dataclass(values):
        values = {field.name: getattr(values, field.name)
                  for field in dataclasses.fields(values)}
    accepted = inspect.signature(callable_).parameters
    return {name: value for name, value in values.items()
            if name in accepted and accepted[name].kind is not inspect.Parameter.VAR_KEYWORD}


def count_parameters(weights):
    return int(sum(np.prod(w.shape) for w in weights))


class Backbone(keras.Model):
    """Base class: a model family's layers from token ids to features, without a head.

    Subclasses create the token embedding with `_make_token_embedding` and their encoder
    in `__init__`; Keras builds them on the first call. `pair_input` says what `call`
    takes: False, a sentence (`SentenceEncoderBackbone`); True, a pair (`PairBackbone`).

    Args:
        vocabulary_size: int, V (rows of the word embedding, padding and unknown included).
        embedding_dim: int, D.
        trainable_embeddings: bool (the paper freezes GloVe).
    """

    pair_input = False

    def __init__(self, vocabulary_size, embedding_dim, trainable_embeddings=False, **kwargs):
        super().__init__(**kwargs)
        if vocabulary_size is None or vocabulary_size < 2:
            raise ValueError(f"vocabulary_size must be at least 2 (padding and unknown), "
                             f"got {vocabulary_size}.")
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.trainable_embeddings = trainable_embeddings

    @classmethod
    def from_preset(cls, preset, dtype=None, load_weights=True):
        """The trained backbone of a preset, a run directory or an export (as
        `NLIClassifier.from_preset` reads them), without its head.

        Examples:
        ```python
        import numpy as np
        from dsan_tf.models import Backbone

        backbone = Backbone.from_preset("dsan_snli25k_glove50")
        backbone.predict(np.array([[4, 5, 6]]))  # sentence vectors [1, 4 d_e]
        ```
        """
        from dsan_tf.models import preset as presets

        model = presets.load(preset, compile=False, dtype=dtype, load_weights=load_weights)
        backbone = getattr(model, "backbone", None)
        if not isinstance(backbone, cls):
            what = type(backbone).__name__ if backbone is not None else "an ensemble"
            raise ValueError(f"{preset} holds {what}, not a {cls.__name__}.")
        return backbone

    def _make_token_embedding(self):
        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size, self.embedding_dim, trainable=self.trainable_embeddings,
            embeddings_initializer=keras.initializers.RandomUniform(-0.05, 0.05),
            name="word_embedding", dtype=self.dtype_policy)

    def set_word_vectors(self, matrix):
        """Loads pre-trained word vectors (float [V, D]); row 0, padding, becomes zeros."""
        matrix = np.array(matrix, dtype="float32")
        if matrix.shape != (self.vocabulary_size, self.embedding_dim):
            raise ValueError(f"word vectors have shape {matrix.shape}, expected "
                             f"[{self.vocabulary_size}, {self.embedding_dim}] "
                             "(vocabulary_size, embedding_dim).")
        matrix[masks.PAD_ID] = 0.0
        if not self.token_embedding.built:
            self.token_embedding.build()
        self.token_embedding.embeddings.assign(matrix)

    def ensure_built(self):
        """Builds the weights (with a one-token input) if no call has built them yet."""
        if not self.built:
            ids = ops.ones((1, 1), "int32")
            self({"premise": ids, "hypothesis": ids} if self.pair_input else ids)

    def parameter_breakdown(self):
        """{part: parameter count}: `word_embedding` (all of its parameters, trainable or
        not), then the trainable parameters of the backbone's parts (`_parts`)."""
        self.ensure_built()
        parts = {"word_embedding": count_parameters(self.token_embedding.weights)}
        parts.update({name: count_parameters(layer.trainable_weights)
                      for name, layer in self._parts()})
        return parts

    def build_from_config(self, config):
        # Keras' `Model.build_from_config` turns any error of a `build` of ours into a
        # warning and goes on: the layers it did not build then keep fresh weights while
        # the file's are skipped, and the loaded model answers differently from the saved
        # one. Here the error is raised (Keras' `Layer.build_from_config`). A backbone
        # without a `build` of its own is built by Keras running `call`, as before.
        if any("build" in vars(cls) for cls in type(self).__mro__ if issubclass(cls, Backbone)):
            keras.layers.Layer.build_from_config(self, config)
        else:
            super().build_from_config(config)

    def _parts(self):
        """(name, layer) pairs the parameter breakdown lists; subclasses refine it."""
        return []

    def get_config(self):
        # The word embedding's trainability as it is now: unfrozen after construction
        # (`backbone.token_embedding.trainable = True`), it stays so in a saved file.
        embedding = getattr(self, "token_embedding", None)
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                "vocabulary_size": self.vocabulary_size, "embedding_dim": self.embedding_dim,
                "trainable_embeddings": (embedding.trainable if embedding is not None
                                         else self.trainable_embeddings)}


class SentenceEncoderBackbone(Backbone):
    """A backbone that encodes one sentence at a time: token ids [B, T] -> vectors [B, E].

    Usable alone to embed sentences: `backbone(ids)` or `backbone.predict(ids)`. The
    subclass sets `self.encoder`, a layer called as `encoder(vectors, padding_mask=...)`
    with an `output_dim(D)` method.
    """

    def build(self, token_ids_shape=None):
        # Built here, not by Keras running `call` symbolically: the variables such a run
        # creates are placeholders whose every read runs their initializer again.
        self.token_embedding.build()
        self.encoder.build((None, None, self.embedding_dim))
        self.built = True

    @property
    def output_dim(self):
        """E, the width of a sentence vector."""
        return self.encoder.output_dim(self.embedding_dim)

    def call(self, token_ids, training=None):
        vectors = self.token_embedding(token_ids)
        return self.encoder(vectors, padding_mask=masks.padding_mask(token_ids),
                            training=training)

    def compute_output_shape(self, token_ids_shape):
        return (token_ids_shape[0], self.output_dim)


class PairBackbone(Backbone):
    """A backbone that reads premise and hypothesis together (cross-sentence attention):
    {"premise": int [B, T1], "hypothesis": int [B, T2]} -> features [B, E]. The task puts
    its classification head directly on these features."""

    pair_input = True
