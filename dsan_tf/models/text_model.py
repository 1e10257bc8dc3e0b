"""What a task model that owns a preprocessor does with raw text (after keras-hub's
`Task`): `fit`, `evaluate` and `predict` take sentence pairs as text, run the
preprocessor in `tf.data` (strings are TensorFlow's on every backend) and the model on the
ids; `compile()` alone is the paper's training setup. `NLIClassifier` and `NLIEnsemble`
share it.

Shape legend: N pairs, C classes.
"""

import importlib
import sys

from dsan_tf.common.frameworks import keras
import numpy as np

from dsan_tf.common.labels import labelled
from dsan_tf.models import optimizers
from dsan_tf.models.config import BATCH_SIZE, LEARNING_RATE
from dsan_tf.speed import compilation, steps


def paper_loss():
    """Cross-entropy on the logits, the mean over the weighted rows: rows that only fill a
    batch to a fixed shape have weight 0 (`dsan_tf.data.batching`); without weights, the
    plain mean."""
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight")


def accuracy_metrics():
    """Accuracy, as a weighted metric (Keras passes sample weights to `weighted_metrics`
    only), so that rows of weight 0 filling a batch are not counted."""
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


def _text_module():
    # The data package's text functions (TensorFlow's strings), loaded when text is given:
    # a model fed ids needs neither.
    # Loaded already wherever a model has a preprocessor (it is one of its classes): then
    # no import runs inside a traced call, where AutoGraph would try to convert
    # `importlib`'s functions and warn that it cannot (a SavedModel's export).
    module = sys.modules.get("dsan_tf.data.preprocessor")
    return module or importlib.import_module("dsan_tf.data.preprocessor")


def _softmax(logits):
    logits = np.asarray(logits, "float32")
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def _free_shapes(data):
    """`data`, or on TensorFlow, for a PyDataset of batches padded each to its own longest
    sentence (unbounded `NLIBatches`), a `tf.data` pipeline of its batches whose lengths
    are free. Keras reads a PyDataset's tensor spec off its first two batches and then
    refuses a batch of another width ("yielded an element of shape (64, 9) where an element
    of shape (None, 7) was expected"). Each epoch's iteration is a new pass, as Keras' own
    adapter calls `on_epoch_end` between epochs."""
    shapes = getattr(data, "shapes", None)
    if keras.backend.backend() != "tensorflow" or not isinstance(data, keras.utils.PyDataset) \
            or getattr(shapes, "bounded", True):
        return data
    from dsan_tf.common.frameworks import tf  # the backend: loaded already

    spec = keras.tree.map_structure(
        lambda value: tf.TensorSpec([None] * np.ndim(value), np.asarray(value).dtype), data[0])
    iterations = []

    def batches():
        if iterations:  # a later epoch: the next pass, as Keras' adapter would draw it
            data.on_epoch_end()
        iterations.append(None)
        for index in range(len(data)):
            yield data[index]

    return tf.data.Dataset.from_generator(batches, output_signature=spec).apply(
        tf.data.experimental.assert_cardinality(len(data))).prefetch(2)


def _split(x, y, sample_weight, fraction, names):
    """Text in memory split as Keras' `validation_split` splits arrays: the last
    `fraction` of the pairs (before any shuffling) for validation; labels as ids or the
    model's label `names`. Returns (x, y,
    sample_weight, validation_data)."""
    text = _text_module()
    premises, hypotheses, _ = text.pair_texts(x)
    keep = int(len(premises) * (1 - fraction))
    if not 0 < keep < len(premises):
        raise ValueError(f"validation_split={fraction} leaves no pairs on one side of "
                         f"{len(premises)}.")
    labels = text.label_ids(y, len(premises), names) if y is not None else None
    weights = np.asarray(sample_weight, "float32") if sample_weight is not None else None
    part = lambda values, side: None if values is None else (  # noqa: E731
        values[:keep] if side == 0 else values[keep:])
    validation = ((premises[keep:], hypotheses[keep:]), part(labels, 1), part(weights, 1))
    return ((premises[:keep], hypotheses[:keep]), part(labels, 0), part(weights, 0),
            validation if weights is not None else validation[:2])


def _class_ids(class_weight, names):
    """`class_weight` keyed by class ids, the model's label `names` read as their ids, as
    labels are (Keras takes ids only); ValueError naming an unknown key."""
    ids = {}
    for key, weight in class_weight.items():
        if isinstance(key, str):
            if names is None:
                raise ValueError(f"class_weight has the key {key!r}: label names are a "
                                 "preprocessor's (its label_names); this model has none, "
                                 "so give class ids.")
            if key not in names:
                raise ValueError(f"class_weight has the key {key!r}; the model's labels: "
                                 f"{', '.join(names)} (or their ids).")
            key = names.index(key)
        ids[int(key)] = weight
    return ids


def _no_pairs(x):
    """Whether `x` is pairs of text with none in it: ([], []) or {"premise": [],
    "hypothesis": []} (a form that holds no string to tell text from ids)."""
    sides = (x.get("premise"), x.get("hypothesis")) if isinstance(x, dict) else x
    return isinstance(sides, (tuple, list)) and len(sides) == 2 and all(
        isinstance(side, (list, tuple, np.ndarray)) and len(side) == 0 for side in sides)


class _Presets:
    """`cls.presets`: {name: what it is} of the trained presets this package ships, as
    keras-hub's classes list theirs (`dsan_tf.presets()` is the same)."""

    def __get__(self, instance, owner):
        from dsan_tf.models import registry

        return registry.preset_descriptions()


class TextModel:
    """Mixin for a Keras task model with a `preprocessor` attribute (None: ids only).

    `predict` and `predict_on_batch` return class probabilities float32 [N, C] (calling
    the model gives the logits the loss reads).
    """

    presets = _Presets()

    @property
    def layers(self):
        # The preprocessor runs in tf.data, outside the model's graph (as keras-hub's).
        return [layer for layer in super().layers
                if layer is not getattr(self, "preprocessor", None)]

    def __call__(self, *args, **kwargs):
        if args and getattr(self, "preprocessor", None) is not None and self._is_text(args[0]):
            # TensorFlow's own error would be "Cast string to int32".
            raise ValueError(
                f"{self.name}(...) takes token ids and returns logits; for text use "
                f"{self.name}.predict(...) (probabilities), or "
                f"{self.name}(model.preprocessor(...)) for the logits of text.")
        return super().__call__(*args, **kwargs)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics=None,
                sentence_programs=None, **kwargs):
        """Keras' `compile`; "auto" is the paper's setup: Adam(1e-3), cross-entropy on the
        logits (`paper_loss`) and accuracy (`accuracy_metrics`). Other values override.

        `sentence_programs` (JAX): the steps as programs per sentence length
        (`dsan_tf.speed.sentence_programs`): True, False, or None (where the step runs on a
        CPU). The steps that apply fill Keras' step-function slots (`speed.steps.attach`).
        On JAX, compiled steps are kept in JAX's persistent cache
        (`speed.compilation.default_jax_cache`: ~/.cache/dsan_tf/jax unless the process
        chose its own, or turned it off)."""
        if optimizer == "auto":
            optimizer = optimizers.Adam(LEARNING_RATE)
        if loss == "auto":
            loss = paper_loss()
        if metrics == "auto":
            metrics = None
            if weighted_metrics is None:
                weighted_metrics = accuracy_metrics()
        build_optimizer = kwargs.pop("build_optimizer", True)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)
        compilation.default_jax_cache()
        steps.attach(self, sentence_programs=sentence_programs)
        if build_optimizer and self.built and not self.optimizer.built:
            # Keras would create the optimizer's variables inside the first training step,
            # and a `tf.function` that creates variables is traced twice: created now, the
            # first `fit` traces once (demo size: 7 s instead of 11).
            self.optimizer.build(self.trainable_variables)

    def summary(self, *args, print_fn=None, **kwargs):
        """Keras' summary, after a line for each preprocessor (they run in `tf.data`, not
        in the model's graph, so Keras' table has no row for them; keras-hub's tasks show
        theirs first)."""
        for preprocessor in self.preprocessors():
            if preprocessor is None or preprocessor.vocabulary is None:
                continue
            line = (f"Preprocessor: {type(preprocessor).__name__} {preprocessor.name!r}: "
                    f"{preprocessor.vocabulary_size:,} words, lower-cased "
                    f"{preprocessor.lowercase}, at most {preprocessor.max_length} tokens a "
                    "sentence")
            (print_fn or print)(line)
        return super().summary(*args, print_fn=print_fn, **kwargs)

    def compile_from_config(self, config):
        # Keras' own skips a `compile` it did not write; this one takes all its arguments
        # but two: whether the step is XLA-compiled (or eager) belongs to the backend that
        # loads the file, not to the one that trained it (a TensorFlow run records False,
        # which made JAX run the reloaded model op by op).
        config = {key: value for key, value in config.items()
                  if key not in ("jit_compile", "run_eagerly")}
        self.compile(**keras.saving.deserialize_keras_object(config))

    def _is_text(self, x):
        return self.preprocessor is not None and _text_module().is_text(x)

    def _text_batches(self, x, y, sample_weight, batch_size, shuffle=False, fill_last=False):
        """(batches of ids, cut) of raw text (`dsan_tf.data.preprocessor.text_batches`),
        their lengths bounded where this model's step compiles per shape (XLA included)."""
        text = _text_module()
        return text.text_batches(self.preprocessors(), x, y, sample_weight, batch_size,
                                 shuffle, keys=self.input_keys(), fill_last=fill_last,
                                 bounded=text.compiled_per_shape(self.jit_compile))

    def preprocessors(self):
        """The `NLIPreprocessor`s whose ids the model takes (one; an ensemble's members'
        each)."""
        return [self.preprocessor]

    @property
    def label_names(self):
        """The names of the C classes, in the order of the outputs: the preprocessor's
        `label_names` (an ensemble's members share them); None without a preprocessor."""
        preprocessor = self.preprocessors()[0]
        return None if preprocessor is None else list(preprocessor.label_names)

    @property
    def max_length(self):
        """The tokens a sentence is cut to, when every preprocessor cuts alike; else None."""
        limits = {p.max_length for p in self.preprocessors() if p is not None}
        return limits.pop() if len(limits) == 1 else None

    def input_keys(self):
        """The keys of the members' ids in the inputs, or None (one preprocessor)."""
        return None

    def _warn_truncated(self, cut, stacklevel=4, what="pairs",
                        hint="predict(..., return_truncated=True) counts the tokens cut"):
        if callable(cut):
            cut = cut()
        _text_module().warn_truncated(cut, what, self.max_length, hint, stacklevel)

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, validation_data=None,
            **kwargs):
        """Keras' `fit`; with a preprocessor, `x` may be text ({"premise": [...],
        "hypothesis": [...]} with `y` labels as ids or names, or a `tf.data.Dataset` of
        such dicts with labels), reshuffled every epoch when in memory."""
        cut = None
        if kwargs.get("class_weight"):
            kwargs["class_weight"] = _class_ids(kwargs["class_weight"], self.label_names)
        if kwargs.get("validation_split") and hasattr(x, "element_spec"):
            # Keras splits arrays only (and says so); text in a dataset is no exception.
            raise ValueError("validation_split splits text or arrays in memory, as Keras "
                             "splits only arrays; for a tf.data.Dataset give "
                             "validation_data= (its .take(n), training on its .skip(n)).")
        if self._is_text(x):
            if kwargs.get("validation_split"):
                if validation_data is not None:
                    raise ValueError("give validation_split or validation_data, not both.")
                x, y, sample_weight, validation_data = _split(
                    x, y, sample_weight, kwargs.pop("validation_split"), self.label_names)
            x, cut = self._text_batches(x, y, sample_weight, batch_size or BATCH_SIZE,
                                        kwargs.get("shuffle", True))
            y = sample_weight = batch_size = None
            kwargs["shuffle"] = False  # done in tf.data, every epoch
        elif isinstance(x, keras.utils.PyDataset) or hasattr(x, "element_spec"):
            # A dataset comes in its maker's order (tf.data, NLIBatches): Keras ignores
            # shuffle there, and its default of True only prints a warning.
            kwargs.setdefault("shuffle", False)
            x = _free_shapes(x)
        if validation_data is not None:
            vx, vy, vw = (keras.utils.unpack_x_y_sample_weight(validation_data)
                          if isinstance(validation_data, tuple) else (validation_data,
                                                                        None, None))
            if self._is_text(vx):
                validation_data, _ = self._text_batches(vx, vy, vw, batch_size)
            else:
                validation_data = _free_shapes(validation_data)
        history = super().fit(x, y, batch_size=batch_size, sample_weight=sample_weight,
                              validation_data=validation_data, **kwargs)
        if cut is not None:
            self._warn_truncated(cut)
        return history

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """Keras' `evaluate`; with a preprocessor, `x` may be text (as `fit`)."""
        cut = None
        if self._is_text(x):
            x, cut = self._text_batches(x, y, sample_weight, batch_size)
            y = sample_weight = batch_size = None
        result = super().evaluate(_free_shapes(x), y, batch_size=batch_size,
                                  sample_weight=sample_weight, **kwargs)
        if cut is not None:
            self._warn_truncated(cut)
        return result

    def predict(self, x, batch_size=None, return_truncated=False, **kwargs):
        """Class probabilities float32 [N, C] (`label_names` order) of ids or, with a
        preprocessor, of text: {"premise": [...], "hypothesis": [...]}, (premises,
        hypotheses) or a `tf.data.Dataset` of such dicts, batched by
        `PREDICTION_BATCH_SIZE` unless `batch_size` says otherwise.

        Args:
            return_truncated: (text in memory) also return {"premise": int [N],
                "hypothesis": int [N]}, the tokens of each sentence cut by the model's
                maximum length. Cutting any sentence also raises one `TruncationWarning`.
        """
        if batch_size is not None and not isinstance(batch_size, int) \
                and self.preprocessor is not None:
            # predict(premises, hypotheses): Keras would read the hypotheses as batch_size.
            raise ValueError(f"{self.name}.predict takes the pairs as one argument: "
                             "predict((premises, hypotheses)) or predict({\"premise\": "
                             "[...], \"hypothesis\": [...]}).")
        cut = None
        if self.preprocessor is not None and _no_pairs(x):
            # No pairs, no probabilities (Keras' own predict fails on an empty batch).
            empty = np.zeros((0, self.output_shape[-1]), "float32")
            nothing = {"premise": np.zeros(0, "int32"), "hypothesis": np.zeros(0, "int32")}
            return (empty, nothing) if return_truncated else empty
        if self._is_text(x):
            # The last batch filled where steps compile per shape: no program of its own.
            x, cut = self._text_batches(x, None, None, batch_size, fill_last=True)
            batch_size = None
        kwargs.setdefault("verbose", 0)
        probabilities = _softmax(super().predict(_free_shapes(x), batch_size=batch_size,
                                                 **kwargs))
        if cut is not None and not callable(cut):
            probabilities = probabilities[:len(cut["premise"])]  # the filled rows dropped
        if cut is not None:
            self._warn_truncated(cut)
        if return_truncated:
            if cut is None or callable(cut):
                raise ValueError("return_truncated needs text in memory (a dict or a tuple "
                                 "of strings).")
            return probabilities, cut
        return probabilities

    def classify(self, premises, hypotheses=None):
        """Sentence pairs classified, with label names: `predict` on text, for reading.

        Args:
            premises, hypotheses: a string each (one pair), or two equally long lists (or
                other sequences) of strings. Or `premises` alone holds both, as `predict`
                takes them: {"premise": [...], "hypothesis": [...]}, a tuple (premises,
                hypotheses) or a pandas DataFrame with those columns.

        Returns:
            dict: `probabilities` float32 [N, C] (what `predict` returns); `labels`, the
            N label names; `label_names`, the C class names; `premise_truncated`,
            `hypothesis_truncated` int [N], the tokens of each sentence cut by the model's
            maximum length (0: read whole). N is 1 for two strings. Cutting any sentence
            also raises one `TruncationWarning`.

        Raises:
            ValueError: a string beside a list, lists of different lengths, or a value
                that is not text.
        """
        premises, hypotheses, _ = _text_module().pair_texts(premises, hypotheses)
        probabilities, cut = self.predict({"premise": premises, "hypothesis": hypotheses},
                                          return_truncated=True)
        return labelled(probabilities, self.label_names,
                        **{f"{side}_truncated": values for side, values in cut.items()})

    def predict_on_batch(self, x):
        """Class probabilities float32 [B, C] of one batch of ids (or of text)."""
        if self._is_text(x):  # one batch of all the pairs
            batches, cut = self._text_batches(x, None, None, 2**31 - 1)
            x = next(iter(batches))
            self._warn_truncated(cut)
        return _softmax(super().predict_on_batch(x))

    def save_to_preset(self, preset_dir, description=""):
        """Writes the model as a preset directory (keras-hub's layout:
        `dsan_tf.models.preset`), which `from_preset` reads back; `description` says what
        it is in one line."""
        from dsan_tf.models import preset

        preset.save(self, preset_dir, description)

    @classmethod
    def from_preset(cls, preset, compile=True, dtype=None, load_weights=True, **kwargs):
        """The model of a preset: the name of a trained one this package ships
        (`cls.presets`) or a directory (`save_to_preset`); or of a run directory of
        `dsan-train`, or an export (EXPORT_DIR or one of its versions; an ensemble's gives
        an `NLIEnsemble` of its members), with its preprocessor.

        Args:
            compile: compiled as it was trained (a new head: with the paper's setup);
                False: not compiled.
            dtype: its layers' dtype policy, which the model reports too; None: the global
                policy where one was set (`keras.mixed_precision.set_global_policy`), else
                the saved one.
            load_weights: False: the architecture with fresh weights.
            **kwargs: constructor arguments that replace the saved ones, as keras-hub's
                `from_preset` takes them: `num_classes` (a new, untrained head on the
                trained backbone), `preprocessor` (None: ids only), `dropout`, ...; and
                `label_names` for the classes (without them, a head of another size names
                its classes class_0, class_1, ...).

        Examples:
        ```python
        from dsan_tf.models import NLIClassifier

        model = NLIClassifier.from_preset("dsan_snli25k_glove50")
        model.predict({"premise": ["A man sleeps."], "hypothesis": ["A man rests."]})
        binary = NLIClassifier.from_preset("dsan_snli25k_glove50", num_classes=2,
                                           label_names=["entailment", "not entailment"])
        ```
        """
        from dsan_tf.models import preset as presets

        return presets.load(preset, compile=compile, dtype=dtype, load_weights=load_weights,
                            **kwargs)
