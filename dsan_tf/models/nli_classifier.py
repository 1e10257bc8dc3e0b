"""The natural language inference task model: any backbone plus the classifier of the
paper's Section 4.1.

Shape legend: B batch, T1 premise tokens, T2 hypothesis tokens, C classes.
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.layers import ClassificationHead, MatchingFeatures, SplitPair, StackPair
from dsan_tf.models.backbone import count_parameters
from dsan_tf.models import registry
from dsan_tf.models.text_model import TextModel


# Why a model has no sentence vectors (`NLIClassifier.encode`).
PAIR_MODEL = ("a pair model (it reads premise and hypothesis together): it has no sentence "
              "embeddings")


def _is_ids(value):
    dtype = getattr(value, "dtype", None)
    return dtype is not None and "int" in str(dtype)


@keras.saving.register_keras_serializable(package="dsan_tf")
class NLIClassifier(TextModel, keras.Model):
    """Premise and hypothesis ids -> class logits; with a preprocessor, raw text in `fit`,
    `evaluate` and `predict` (`TextModel`), as keras-hub's classifiers take it.

    With a sentence-encoder backbone, one set of weights encodes both sentences (u, v) and
    the head reads `MatchingFeatures` [u; v; |u - v|; u * v]; with a pair backbone
    (`backbone.pair_input`) the head reads the backbone's pair features.

    Args:
        backbone: a `dsan_tf.models.Backbone`.
        num_classes: C (3: entailment, neutral, contradiction, as `dsan_tf.LABELS`); the
            preprocessor's `label_names` name as many.
        hidden_units: width of the head's ReLU layer (300).
        dropout: on the head's ReLU layer (0.1).
        input_dropout: on the head's input features (the paper: none).
        layer_norm_epsilon: float.
        hidden_layer_norm: LayerNorm on the head's hidden layer (DSAN: yes).
        hidden_activation: "relu" or "tanh" (AF-DMN).
        initialization: of the head's layers, "glorot" or "san4nli" (PyTorch's
            `nn.Linear` default; `dsan_tf.layers.utils.dense_initializers`).
        preprocessor: the `dsan_tf.data.NLIPreprocessor` its ids come from, or None (ids
            only). It is saved with the model (its vocabulary as an asset).
        one_pass: a sentence-encoder backbone reads premise and hypothesis in one call,
            as one batch of 2B padded to the longer side (`StackPair`): half the compiled
            program, more padded tokens. The same function of the weights (the padding is
            masked); dropout draws differ. Off: two calls.
        compile: compile it with the paper's setup (`compile()`), as keras-hub's tasks
            come; False leaves it uncompiled.

    Call arguments:
        inputs: {"premise": int [B, T1], "hypothesis": int [B, T2]}, 0 padding.
        training: bool.

    Returns:
        float32 logits [B, C] (`predict`: probabilities).

    Examples:
    ```python
    import numpy as np
    import dsan_tf

    # A trained preset, on text:
    model = dsan_tf.NLIClassifier.from_preset("dsan_snli25k_glove50")
    model.predict({"premise": ["A man sleeps."], "hypothesis": ["A man rests."]})  # [1, 3]

    # A new classifier on a backbone, on ids:
    backbone = dsan_tf.DSANBackbone(vocabulary_size=100, embedding_dim=8, num_heads=2,
                                    ffn_dim=16)
    classifier = dsan_tf.NLIClassifier(backbone, hidden_units=16)
    ids = {"premise": np.array([[4, 5, 6]]), "hypothesis": np.array([[4, 7, 0]])}
    classifier.predict(ids)  # probabilities [1, 3]
    ```
    """

    def __init__(self, backbone, num_classes=3, hidden_units=300, dropout=0.1,
                 input_dropout=0.0, layer_norm_epsilon=1e-5, hidden_layer_norm=True,
                 hidden_activation="relu", initialization="glorot", preprocessor=None,
                 one_pass=False, compile=True, **kwargs):
        # The head is made before the backbone is first called (see DSANBackbone).
        head = ClassificationHead(hidden_units=hidden_units, num_classes=num_classes,
                                  dropout=dropout, input_dropout=input_dropout,
                                  layer_norm_epsilon=layer_norm_epsilon,
                                  hidden_layer_norm=hidden_layer_norm,
                                  activation=hidden_activation,
                                  initialization=initialization,
                                  name="classification_head", dtype=backbone.dtype_policy)
        inputs = {side: keras.Input(shape=(None,), dtype="int32", name=side)
                  for side in ("premise", "hypothesis")}
        if backbone.pair_input:
            features = backbone(inputs)
        elif one_pass:
            both = StackPair(name="stack_pair")(inputs["premise"], inputs["hypothesis"])
            features = MatchingFeatures(name="matching_features", dtype=backbone.dtype_policy)(
                *SplitPair(name="split_pair")(backbone(both)))
        else:
            features = MatchingFeatures(name="matching_features", dtype=backbone.dtype_policy)(
                backbone(inputs["premise"]), backbone(inputs["hypothesis"]))
        super().__init__(inputs=inputs, outputs=head(features), **kwargs)
        # The task reports the policy its layers run (a Functional model takes no dtype).
        self.dtype_policy = backbone.dtype_policy
        self.backbone = backbone
        self.head = head
        self.num_classes = num_classes
        self.hidden_units = hidden_units
        self.dropout = dropout
        self.input_dropout = input_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.hidden_layer_norm = hidden_layer_norm
        self.hidden_activation = hidden_activation
        self.initialization = initialization
        self.preprocessor = preprocessor
        self.one_pass = bool(one_pass and not backbone.pair_input)
        if compile:
            # Compiled when built, as keras-hub's tasks come: `fit` works at once with the
            # paper's setup; `compile(...)` replaces it. The optimizer's variables wait for
            # the first step (a model only used for inference has none).
            self.compile(build_optimizer=False)

    def __setattr__(self, name, value):
        # Both sizes are known when a preprocessor is given: a vocabulary larger than the
        # embedding table fails later in TensorFlow's GatherV2, or gives NaN on JAX.
        backbone = self.__dict__.get("backbone")
        if name == "preprocessor" and backbone is not None and \
                getattr(value, "vocabulary", None) is not None and \
                value.vocabulary_size > backbone.vocabulary_size:
            raise ValueError(
                f"the preprocessor's vocabulary has {value.vocabulary_size:,} ids, more than "
                f"the {backbone.vocabulary_size:,} rows of {backbone.name}'s token "
                "embedding: give it the vocabulary the backbone was built for, or a backbone "
                f"of vocabulary_size={value.vocabulary_size}.")
        names = getattr(value, "label_names", None)
        if name == "preprocessor" and names is not None and \
                len(names) != self.__dict__.get("num_classes", len(names)):
            raise ValueError(
                f"the preprocessor names {len(names)} labels ({', '.join(names)}) but "
                f"{self.name}'s head has {self.num_classes} classes: give it "
                f"label_names of {self.num_classes} (NLIPreprocessor(..., label_names=[...]); "
                "from_preset(..., num_classes=N, label_names=[...])).")
        if name == "backbone" and backbone is not None and value is not backbone:
            # The backbone is part of the model's graph: a new one would be ignored by
            # `predict`, and the `.keras` file saved after it could not be loaded.
            raise AttributeError(
                f"{self.name}.backbone cannot be replaced (the model's graph holds it): make "
                "a new classifier on the other backbone, NLIClassifier(backbone, "
                "preprocessor=...), or load one with NLIClassifier.from_preset(...).")
        super().__setattr__(name, value)

    def encode(self, sentences, batch_size=None, return_truncated=False):
        """Sentence vectors float32 [N, E] (the backbone's: 4·d_e for DSAN) of text (with
        a preprocessor: a string or a list of strings) or of ids int [N, T]. Needs a
        sentence-encoder backbone.

        Args:
            return_truncated: (text) also return int [N], the tokens of each sentence cut
                by the preprocessor's `max_length`. Cutting any also raises one
                `TruncationWarning`.
        """
        if self.backbone.pair_input:
            raise ValueError(f"{self.name} is {PAIR_MODEL}.")
        cut = None
        if self.preprocessor is not None and not _is_ids(sentences):
            sentences, cut = self.preprocessor.sentence_batches(sentences, batch_size)
            batch_size = None
            self._warn_truncated({"sentences": cut}, what="sentences",
                                 hint="return_truncated=True gives the tokens cut")
        vectors = self.backbone.predict(sentences, batch_size=batch_size, verbose=0)
        vectors = keras.ops.convert_to_numpy(vectors).astype("float32")
        if return_truncated:
            if cut is None:
                raise ValueError("return_truncated needs text.")
            return vectors, cut
        return vectors

    def parameter_breakdown(self):
        """The backbone's parts (`Backbone.parameter_breakdown`), `classifier` (the head)
        and `params_excluding_embeddings`: all trainable parameters but the embedding's."""
        parts = self.backbone.parameter_breakdown()
        parts["classifier"] = count_parameters(self.head.trainable_weights)
        embedding = {id(w) for w in self.backbone.token_embedding.weights}
        parts["params_excluding_embeddings"] = count_parameters(
            [w for w in self.trainable_weights if id(w) not in embedding])
        return parts

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "backbone": keras.layers.serialize(self.backbone),
                "num_classes": self.num_classes, "hidden_units": self.hidden_units,
                "dropout": self.dropout, "input_dropout": self.input_dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "hidden_layer_norm": self.hidden_layer_norm,
                "hidden_activation": self.hidden_activation,
                "initialization": self.initialization, "one_pass": self.one_pass,
                "preprocessor": (keras.layers.serialize(self.preprocessor)
                                 if self.preprocessor is not None else None)}

    @classmethod
    def from_config(cls, config):
        """The model of `get_config`, uncompiled: Keras' loaders compile it from the
        file's own compile config when asked (`keras.saving.load_model(compile=True)`)."""
        config = dict(config)
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.layers.deserialize(config[key])
        return cls(**config, compile=False)

    def get_compile_config(self):
        """Keras' compile config, with the optimizer named by its public class: PyTorch's
        Keras swaps Adam for `keras.src.backend.torch.optimizers.torch_adam.Adam`, and a
        file that names it imports PyTorch wherever it loads (a TensorFlow process then
        crashes), so that `.keras` files stay portable across backends."""
        config = super().get_compile_config()
        optimizer = (config or {}).get("optimizer")
        if isinstance(optimizer, dict) and ".backend." in optimizer.get("module", ""):
            optimizer["module"] = "keras.optimizers"
        return config


# A task model holds any family's backbone: importing it registers every Keras class of the
# project (`registry.register_keras_classes`), so that Keras' loaders read any `.keras` file
# of ours after it, as keras-hub's read theirs after `import keras_hub`.
registry.register_keras_classes()
