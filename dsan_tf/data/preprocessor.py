"""Raw sentence pairs -> token ids: one Keras layer for training, evaluation and serving.

Shape legend: B pairs or sentences, T tokens (after padding), N examples.
"""

import json
import os
import warnings

from dsan_tf.common.frameworks import keras
import numpy as np
# Strings are TensorFlow's (tf.strings, tf.data) on every backend.
from dsan_tf.common.frameworks import tf

from dsan_tf.common import atomic
from dsan_tf.common.labels import LABELS
from dsan_tf.data import PREPROCESSOR_FILE as SETTINGS_FILE, VOCABULARY_FILE
from dsan_tf.data.examples import DataError
from dsan_tf.data.pipeline import DEFAULT_MAX_LENGTH, EncodedPairs, EncodeReport
from dsan_tf.data.tokenizer import tokenize
from dsan_tf.data.vocabulary import PAD_ID, UNK_ID, Vocabulary

# Pairs per batch when raw text is predicted or evaluated (`text_batches`): the one place.
PREDICTION_BATCH_SIZE = 256
SIDES = ("premise", "hypothesis")


class TruncationWarning(UserWarning):
    """Some input was longer than the model's `max_length` and was cut to it."""


@keras.saving.register_keras_serializable(package="dsan_tf")
class NLIPreprocessor(keras.layers.Layer):
    """The tokenizer (`dsan_tf.data.tokenize`), the vocabulary and the truncation length:
    the text processing a model was trained with, as a Keras layer that runs in `tf.data`
    (string handling is TensorFlow's on every backend, as in keras-hub).

    The training pipeline (`encode`), raw text in `NLIClassifier.fit/evaluate/predict`
    (`text_batches`) and the exported SavedModel (`dense_ids_and_cut`, traced into it) all
    map text to ids through the same `token_ids`. In a `.keras` file the vocabulary is an
    asset (`vocab.json`); `get_config` holds the rest.

    Args:
        vocabulary: `dsan_tf.data.Vocabulary` (it also fixes lower-casing); None until
            `load_assets` sets it (loading a `.keras` file).
        max_length: truncate sentences to this many tokens; None or 0: never.
        label_names: the names of the model's C classes, in the order of its outputs
            (labels given as names become their positions; `classify` reports them):
            `dsan_tf.LABELS` for NLI's three.

    Call arguments:
        x: {"premise": string [B], "hypothesis": string [B]}.
        y: optional labels int [B]; sample_weight: optional float [B].

    Returns:
        ({"premise": int32 [B, T1], "hypothesis": int32 [B, T2]}, y, sample_weight) as
        `keras.utils.pack_x_y_sample_weight` packs them (ids alone without labels).

    Examples:
    ```python
    from dsan_tf.data import NLIPreprocessor, Vocabulary

    vocabulary = Vocabulary(["a", "man", "sleeps", "rests"], lowercase=True)
    preprocessor = NLIPreprocessor(vocabulary, max_length=8)
    ids = preprocessor({"premise": ["A man sleeps."], "hypothesis": ["A man rests."]})
    ids["premise"].shape  # (1, 4): a, man, sleeps, "." (unknown)
    ```
    """

    def __init__(self, vocabulary=None, max_length=DEFAULT_MAX_LENGTH, label_names=LABELS,
                 **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.max_length = max_length or None
        names = [label_names] if isinstance(label_names, str) else list(label_names)
        if len(names) < 2 or len(set(names)) != len(names) or not all(
                isinstance(name, str) and name for name in names):
            raise ValueError(f"label_names={label_names!r}: give two or more different "
                             "names, one per class.")
        self.label_names = tuple(names)
        self.vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.built = True  # no weights: the lookup table is the vocabulary's

    def set_vocabulary(self, vocabulary):
        """Uses `vocabulary` (a `Vocabulary`) from now on."""
        self.vocabulary = vocabulary
        self.lookup = vocabulary.lookup_layer()
        self.lookup(tf.constant([""]))  # builds it: an unbuilt layer cannot be exported
        # The lookup runs in tf.data and in exports, never in the model's compiled step;
        # its `supports_jit = False` made Keras compile no step of a model holding this
        # preprocessor, so JAX ran it op by op (docs/API.md's example, 64 pairs, 2 epochs:
        # `fit` 55.6 s against 10.8 s compiled, `predict` 10.1 s against 2.1 s).
        self.lookup.supports_jit = True

    @property
    def lowercase(self):
        return self.vocabulary.lowercase

    @property
    def vocabulary_size(self):
        return self.vocabulary.size

    def tokens(self, sentence):
        """The tokens of one sentence as str (what the figures label their axes with)."""
        return [t.decode("utf-8") for t in tokenize([sentence], self.lowercase).to_list()[0]]

    def token_ids(self, texts):
        """Token ids of `texts` (string [B]), not truncated: int32 RaggedTensor [B, None]."""
        if self.vocabulary is None:
            # keras-hub's tokenizers keep their vocabulary out of `get_config` too.
            raise ValueError(f"the preprocessor {self.name} has no vocabulary: a "
                             "configuration (from_config, clone_model) holds none. Load the "
                             "model with its files (NLIClassifier.from_preset, "
                             "keras.saving.load_model), or give one: "
                             "preprocessor.set_vocabulary(vocabulary).")
        tokens = tokenize(texts, lowercase=self.lowercase)
        return tf.cast(tokens.with_flat_values(self.lookup(tokens.flat_values)), tf.int32)

    def __call__(self, x, y=None, sample_weight=None):
        # Strings in, ids out, in eager code, a tf.function or tf.data: none of Keras'
        # tensor conversion (strings are no backend's tensors but TensorFlow's).
        return self.call(x, y, sample_weight)

    def call(self, x, y=None, sample_weight=None):
        """{"premise", "hypothesis"} strings [B] -> int32 ids [B, T]; or one pair of
        scalar strings (an unbatched `tf.data` element, as keras-hub's preprocessors take
        it) -> ids [max_length], padded to the maximum length so that elements batch.
        Labels `y` given as names or one-hot rows become class ids. A (premises,
        hypotheses) tuple stands for the dict, as keras-hub's `((premises, hypotheses),
        labels)` datasets hold it."""
        if isinstance(x, (tuple, list)) and len(x) == len(SIDES):
            x = dict(zip(SIDES, x))
        texts = {side: tf.convert_to_tensor(x[side]) for side in SIDES}
        if all(text.shape.rank == 0 for text in texts.values()):
            ids = {side: self.dense_ids(text[None])[0] for side, text in texts.items()}
            if self.max_length:
                ids = {side: tf.pad(value, [[0, self.max_length - tf.shape(value)[0]]])
                       for side, value in ids.items()}
            if y is not None:
                y = _label_tensor(tf.convert_to_tensor(y)[None], self.label_names)[0]
        else:
            ids = {side: self.dense_ids(text) for side, text in texts.items()}
            if y is not None:
                y = _label_tensor(tf.convert_to_tensor(y), self.label_names)
        return keras.utils.pack_x_y_sample_weight(ids, y, sample_weight)

    def dense_ids(self, texts):
        """Truncated, padded token ids of `texts` (string [B]): int32 [B, T], T >= 1."""
        return self.dense_ids_and_cut(texts)[0]

    def cut(self, ids):
        """(`ids` cut to `max_length`, int32 [B] tokens cut from each row) of ragged ids."""
        if not self.max_length:
            return ids, tf.zeros_like(ids.row_lengths(), tf.int32)
        cut = tf.cast(tf.maximum(ids.row_lengths() - self.max_length, 0), tf.int32)
        return ids[:, :self.max_length], cut

    def dense_ids_and_cut(self, texts):
        """(truncated, padded token ids int32 [B, T] with T >= 1, and int32 [B] how many
        tokens of each text were cut by `max_length`: 0 when it was read whole)."""
        ids, cut = self.cut(self.token_ids(texts))
        return dense(ids), cut

    def encode(self, examples):
        """Token ids of `examples` (a list of `dsan_tf.data.Example`), truncated to
        `max_length`, with an `EncodeReport` counting unknown and truncated tokens.

        Returns: `EncodedPairs` (ragged int32 [N, None] per side, labels int32 [N])."""
        report = EncodeReport(examples=len(examples), max_length=self.max_length)
        sides = []
        for side in SIDES:
            ids = self.token_ids([getattr(e, side) for e in examples])
            lengths = ids.row_lengths()
            report.tokens += int(tf.size(ids.flat_values))
            report.unknown_tokens += int(tf.reduce_sum(
                tf.cast(ids.flat_values == UNK_ID, tf.int32)))
            report.longest = max(report.longest,
                                 int(tf.reduce_max(lengths)) if len(examples) else 0)
            ids, cut = self.cut(ids)
            if self.max_length:  # the report's fields: truncated_premises, _hypotheses
                plural = {"premise": "premises", "hypothesis": "hypotheses"}[side]
                setattr(report, f"truncated_{plural}", int(tf.math.count_nonzero(cut)))
            sides.append(ids)
        labels = np.array([e.label for e in examples], dtype=np.int32)
        return EncodedPairs(sides[0], sides[1], labels, report)

    def text_batches(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                     seed=None):
        """Raw text -> batches of ids: what `NLIClassifier.fit/evaluate/predict` run on
        text (`text_batches`, the one implementation), their lengths bounded where the
        backend compiles per shape."""
        return text_batches([self], x, y, sample_weight, batch_size, shuffle, seed,
                            bounded=compiled_per_shape(jit_compile=False))

    def sentence_batches(self, sentences, batch_size=None, by_length=False):
        """Sentences -> batches of ids (the one raw-text path for sentence vectors).

        Args:
            sentences: a string or a sequence of strings (an empty one is refused).
            batch_size: sentences per batch (default `PREDICTION_BATCH_SIZE`).
            by_length: shortest first (less padding; the order is not the input's).

        Returns:
            (`tf.data.Dataset` of int32 [B, T] batches, int [N] tokens cut from each
            sentence by `max_length`, in the input's order).
        """
        values, _ = texts(sentences, "sentences")
        ids, cut = self.cut(self.token_ids(values))
        if by_length:
            order = np.argsort(ids.row_lengths().numpy(), kind="stable")
            ids = tf.gather(ids, order)
        dataset = tf.data.Dataset.from_tensor_slices(ids).batch(
            batch_size or PREDICTION_BATCH_SIZE).map(dense)
        return dataset.prefetch(tf.data.AUTOTUNE), cut.numpy()

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length,
                "label_names": list(self.label_names)}

    def save_assets(self, dir_path):
        self.vocabulary.save(os.path.join(dir_path, VOCABULARY_FILE))

    def load_assets(self, dir_path):
        self.set_vocabulary(Vocabulary.load(os.path.join(dir_path, VOCABULARY_FILE)))

    def save(self, directory):
        """Writes `vocab.json` and `preprocessor.json` into `directory` (a run directory)."""
        self.vocabulary.save(os.path.join(directory, VOCABULARY_FILE))
        settings = {"max_length": self.max_length}
        if self.label_names != LABELS:  # a run's are NLI's, as its config.json says
            settings["label_names"] = list(self.label_names)
        atomic.write_text(os.path.join(directory, SETTINGS_FILE), json.dumps(settings))

    @classmethod
    def load(cls, directory):
        """The preprocessor `save` wrote into `directory`."""
        vocabulary = Vocabulary.load(os.path.join(directory, VOCABULARY_FILE))
        settings_path = os.path.join(directory, SETTINGS_FILE)
        try:
            with open(settings_path, encoding="utf-8") as stream:
                settings = json.load(stream)
            length = settings["max_length"]
            if length is not None and (not isinstance(length, int) or isinstance(length, bool)
                                       or length < 1):
                raise ValueError(f"max_length {length!r} is not a positive integer or null")
            # Files written before label names were kept: NLI's three.
            return cls(vocabulary, length, settings.get("label_names", LABELS))
        except FileNotFoundError:
            raise DataError(f"{settings_path} does not exist.") from None
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
            raise DataError(f"{settings_path} is not a preprocessor file ({error}).") from None


# The lengths text batches are padded to where a model's steps compile once per input
# shape (JAX, PyTorch): powers of two and 1.5 times them (8, 12, 16, 24, 32, ...), so that
# SNLI's dev set runs in a handful of programs instead of one per batch's longest sentence,
# each padded by at most half (powers of two alone padded up to twice the length: SNLI dev's
# predict on JAX in a fresh process took 19.2 s, now 16.1 s, against TensorFlow's 12.1 s;
# records/runs/text_predict_snli_dev.json). Padding changes no result (it is masked).
BOUNDED_LENGTHS = tuple(sorted({2 ** power for power in range(3, 16)}
                               | {3 * 2 ** power for power in range(2, 14)}))


def compiled_per_shape(jit_compile):
    """Whether a model's step is compiled once per input shape: on JAX and PyTorch, and on
    TensorFlow with XLA (`jit_compile` True, a model's resolved `jit_compile`): text
    batches are then padded to `BOUNDED_LENGTHS`. TensorFlow's traced step without XLA
    takes any length (padded to its own longest sentence, a text `fit` of 192 pairs
    compiled by XLA took 101.8 s against 9.5 s without XLA)."""
    return keras.backend.backend() != "tensorflow" or jit_compile is True


def dense(ids, bounded=False):
    """Ragged ids [B, None] -> int32 [B, T] padded with 0, T >= 1 (an all-padding column
    never changes a result, and a zero-width batch would); `bounded`: T the least of
    `BOUNDED_LENGTHS` that holds the longest row."""
    ids = ids.to_tensor(PAD_ID)
    width = tf.shape(ids)[1]
    if bounded:
        lengths = tf.constant(BOUNDED_LENGTHS, tf.int32)
        target = tf.gather(lengths, tf.minimum(
            tf.searchsorted(lengths, tf.reshape(width, [1]))[0], len(BOUNDED_LENGTHS) - 1))
        target = tf.maximum(target, width)
    else:
        target = tf.maximum(width, 1)
    return tf.pad(ids, [[0, 0], [0, target - width]])


def _is_string_pair(spec):
    """Whether a dataset element's spec is (premise, hypothesis) strings."""
    return isinstance(spec, tuple) and len(spec) == 2 and all(
        getattr(side, "dtype", None) == tf.string for side in spec)


# The columns a pair's sentences go by in SNLI's and MultiNLI's files (the programs read
# both names).
SNLI_COLUMNS = ("sentence1", "sentence2")


def _columns(x):
    """{"premise", "hypothesis"} of a pandas DataFrame's premise and hypothesis (or
    sentence1 and sentence2) columns, or of a NumPy array of strings [N, 2]; else `x`."""
    if hasattr(x, "columns") and hasattr(x, "to_numpy"):
        for names in (SIDES, SNLI_COLUMNS):
            if all(name in x.columns for name in names):
                return {side: x[name] for side, name in zip(SIDES, names)}
    if isinstance(x, np.ndarray) and x.ndim == 2 and x.shape[1] == 2 \
            and x.dtype.kind in "USO":
        return {"premise": x[:, 0], "hypothesis": x[:, 1]}
    return x


def is_text(x):
    """Whether `x` is raw text for a classifier: a dict (or a pandas DataFrame, or a
    `tf.data.Dataset` of dicts) whose premises are strings, or a pair (premises,
    hypotheses) of strings (or a dataset of such pairs, keras-hub's form)."""
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        if _is_string_pair(spec):
            return True
        spec = spec[0] if isinstance(spec, tuple) else spec
        return _is_string_pair(spec) or isinstance(spec, dict) and getattr(
            spec.get("premise"), "dtype", None) == tf.string
    x = _columns(x)
    if isinstance(x, (tuple, list)) and len(x) == 2 and not isinstance(x[0], dict):
        x = {"premise": x[0], "hypothesis": x[1]}
    if not isinstance(x, dict) or "premise" not in x:
        return False
    value = x["premise"]
    if hasattr(value, "to_numpy"):  # a pandas Series (pandas 3: its own string dtype)
        value = value.to_numpy(dtype=object)
    if isinstance(value, (str, bytes)):
        return True
    if isinstance(value, tf.Tensor):
        return value.dtype == tf.string
    array = np.asarray(value) if isinstance(value, (list, tuple, np.ndarray)) else None
    return array is not None and (array.dtype.kind in "USO") and array.size > 0 and \
        isinstance(array.flat[0], (str, bytes))


def texts(value, what):
    """(list of str, whether `value` was one string) of a string or a sequence of them;
    ValueError for anything else and for an empty sentence (it would be classified from
    padding alone)."""
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        if not text.strip():
            one = {"premises": "premise", "hypotheses": "hypothesis"}.get(what, "sentence")
            raise ValueError(f"the {one} is empty: a sentence needs at least one word.")
        return [text], True
    if isinstance(value, tf.Tensor):
        value = value.numpy().reshape(-1)
    if hasattr(value, "to_numpy"):  # a pandas Series
        value = value.to_numpy(dtype=object)
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"{what} must be a string or a list of strings, got "
                         f"{type(value).__name__}.") from None
    for index, text in enumerate(items):
        if isinstance(text, bytes):
            items[index] = text = text.decode("utf-8")
        elif not isinstance(text, str):
            raise ValueError(f"{what}[{index}] is {type(text).__name__}, not a string.")
        if not text.strip():
            raise ValueError(f"{what}[{index}] is empty: a sentence needs at least one word "
                             "(an empty one would be classified from padding alone).")
    return items, False


def pair_texts(x, hypotheses=None):
    """(premises, hypotheses, whether one pair was given) of {"premise", "hypothesis"} or
    (premises, hypotheses): strings or equally long sequences of them (a pandas
    DataFrame: its premise and hypothesis columns); or of `x` the premises and
    `hypotheses` beside them (`classify(premises, hypotheses)`)."""
    if hypotheses is not None:
        x = (x, hypotheses)
    x = _columns(x)
    if isinstance(x, (tuple, list)) and len(x) == 2:
        x = {"premise": x[0], "hypothesis": x[1]}
    if not isinstance(x, dict) or set(x) != set(SIDES):
        raise ValueError('give text as {"premise": [...], "hypothesis": [...]} (or a tuple '
                         "(premises, hypotheses)).")
    premises, one = texts(x["premise"], "premises")
    hypotheses, one_hypothesis = texts(x["hypothesis"], "hypotheses")
    if one != one_hypothesis:
        raise ValueError("give premises and hypotheses both as strings (one pair) or both "
                         "as lists of strings, not a string beside a list.")
    if len(premises) != len(hypotheses):
        raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses: "
                         "give one hypothesis per premise.")
    return premises, hypotheses, one


def label_ids(y, count, names):
    """int32 [N] of labels given as ids, as `names` (the model's C label names) or one-hot
    [N, C]."""
    if hasattr(y, "to_numpy"):  # a pandas Series
        y = y.to_numpy(dtype=object)
    array = np.asarray(y) if not isinstance(y, (list, tuple)) or (
        y and isinstance(y[0], (list, tuple, np.ndarray))) else None
    ids_of = {name: index for index, name in enumerate(names)}
    if array is not None and array.ndim == 2 and array.shape[1] == len(names) \
            and array.dtype.kind in "biuf":
        if array.shape[0] != count:
            raise ValueError(f"{array.shape[0]} one-hot labels for {count} pairs.")
        if not (np.isin(array, (0, 1)).all() and (array.sum(axis=1) == 1).all()):
            raise ValueError(f"labels of shape [N, {len(names)}] must be one-hot rows (one 1, "
                             "the rest 0); soft labels need a categorical loss: give class "
                             "ids instead.")
        return array.argmax(axis=1).astype("int32")
    values = list(y) if isinstance(y, (list, tuple)) else list(np.asarray(y).reshape(-1))
    if len(values) != count:
        raise ValueError(f"{len(values)} labels for {count} pairs.")
    ids = []
    for index, value in enumerate(values):
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if isinstance(value, str):
            if value not in ids_of:
                raise ValueError(f"label {index} is {value!r}; the model's labels: "
                                 f"{', '.join(names)}.")
            value = ids_of[value]
        if not 0 <= int(value) < len(names):
            # The loss would fail in a graph op (TensorFlow) or read garbage (JAX).
            raise ValueError(f"label {index} is {value!r}; class ids are 0 to "
                             f"{len(names) - 1} ({', '.join(names)}).")
        ids.append(int(value))
    return np.array(ids, "int32")


def text_batches(preprocessors, x, y=None, sample_weight=None, batch_size=None,
                 shuffle=False, seed=None, keys=None, fill_last=False, *, bounded):
    """The one raw-text path: text -> token ids -> batches, for one model's preprocessor
    or an ensemble's (one per member).

    Args:
        preprocessors: `NLIPreprocessor`s; with several (an ensemble's members), each
            batch holds {key: {"premise", "hypothesis"}}, one of `keys` each.
        x: {"premise": ..., "hypothesis": ...} of strings or sequences of strings, the
            tuple (premises, hypotheses), or a `tf.data.Dataset` of such dicts (batched or
            not), with labels (and sample weights) after them.
        y: labels, ids or names, for text in memory; sample_weight: float [N].
        batch_size: pairs per batch (default `PREDICTION_BATCH_SIZE`; a batched dataset
            keeps its batches).
        shuffle: reshuffle the pairs every pass (text in memory; seeded with `seed`).
        fill_last: (text in memory, no labels, `bounded`) the last batch filled to
            `batch_size` with padding rows (no program of its own); the caller drops them.
        bounded: pad each batch to the least of `BOUNDED_LENGTHS` that holds it (the
            model's step compiles per shape: `compiled_per_shape`), else to its longest.

    Returns:
        (`tf.data.Dataset` of packed (ids, labels, weights) batches, cut), where cut is
        {"premise": int [N], "hypothesis": int [N]} the tokens each sentence lost to
        `max_length` (the most any member cut), or, for a dataset, a function that gives
        {"pairs": n} pairs cut so far (counted while the dataset runs).
    """
    batch_size = batch_size or PREDICTION_BATCH_SIZE
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError("a tf.data.Dataset carries its own labels: give no y or "
                             "sample_weight beside it.")
        return _dataset_batches(preprocessors, x, batch_size, keys, bounded)
    premises, hypotheses, _ = pair_texts(x)
    many, cut = members_ids(preprocessors, {"premise": premises, "hypothesis": hypotheses})
    cut = {side: values.numpy() for side, values in cut.items()}
    columns = [tuple(many)]
    if y is not None:
        columns.append(label_ids(y, len(premises), preprocessors[0].label_names))
    if sample_weight is not None:
        columns.append(np.asarray(sample_weight, "float32"))
    dataset = tf.data.Dataset.from_tensor_slices(tuple(columns))
    if shuffle:
        dataset = dataset.shuffle(len(premises), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size).map(
        lambda many_ids, *rest: (_model_ids(many_ids, keys, bounded), *rest) if rest
        else _model_ids(many_ids, keys, bounded))
    if fill_last and len(columns) == 1 and bounded:
        dataset = dataset.map(lambda ids: tf.nest.map_structure(
            lambda rows: tf.pad(rows, [[0, batch_size - tf.shape(rows)[0]], [0, 0]]), ids))
    return dataset.prefetch(tf.data.AUTOTUNE), cut


def members_ids(preprocessors, texts_by_side):
    """Each preprocessor's ids of {"premise": string [N], "hypothesis": string [N]}: ([{side:
    ragged int32 [N, None]} per preprocessor], {side: int32 [N], the most tokens any of them
    cut}) (the one tokenize -> look up -> truncate step of text for a model or an
    ensemble)."""
    many, cut = [], {}
    for preprocessor in preprocessors:
        sides = {}
        for side in SIDES:
            sides[side], side_cut = preprocessor.cut(preprocessor.token_ids(texts_by_side[side]))
            cut[side] = tf.maximum(cut[side], side_cut) if side in cut else side_cut
        many.append(sides)
    return many, cut


def _model_ids(many, keys, bounded):
    """Ragged {side: ids} per preprocessor -> the model's dense inputs: one dict, or a
    dict of them under `keys` (not a tuple: Keras reads a tuple as (inputs, labels)),
    `bounded` as `text_batches` says."""
    dense_ids = [{side: dense(ids, bounded) for side, ids in one.items()} for one in many]
    return dense_ids[0] if len(dense_ids) == 1 else dict(zip(keys, dense_ids))


def _label_tensor(labels, names):
    """int32 labels of a dataset's labels, ids or `names` (the model's); an unknown name
    stops the dataset with an error naming the labels."""
    if labels.dtype != tf.string:
        if labels.shape.rank == 2:  # one-hot [B, C], as in memory (`label_ids`)
            one_hot = tf.debugging.assert_equal(
                tf.reduce_sum(tf.cast(tf.equal(labels, 1), tf.int32), axis=-1), 1,
                message="labels of shape [B, C] must be one-hot rows")
            with tf.control_dependencies([one_hot]):
                return tf.cast(tf.argmax(labels, axis=-1), tf.int32)
        return tf.cast(labels, tf.int32)
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        list(names), list(range(len(names))), tf.string, tf.int32), -1)
    ids = table.lookup(labels)
    with tf.control_dependencies([tf.debugging.assert_non_negative(
            ids, message=f"a label is none of {', '.join(names)}")]):
        return tf.identity(ids)


def _dataset_batches(preprocessors, x, batch_size, keys, bounded):
    """`text_batches` of a `tf.data.Dataset` of text dicts or (premise, hypothesis)
    pairs, with labels as ids or names (batched by `batch_size` when its elements are
    single pairs); the pairs cut are counted while it runs."""
    element = x.element_spec
    if _is_string_pair(element):  # (premise, hypothesis), no labels
        x = x.map(lambda premise, hypothesis: {"premise": premise, "hypothesis": hypothesis})
    elif isinstance(element, tuple) and _is_string_pair(element[0]):  # keras-hub's form
        x = x.map(lambda pair, *rest: ({"premise": pair[0], "hypothesis": pair[1]}, *rest))
    element = x.element_spec
    element = element[0] if isinstance(element, tuple) else element
    if element["premise"].shape.rank == 0:
        x = x.batch(batch_size)
    counter = tf.Variable(0, dtype=tf.int64, trainable=False)

    def prepare(inputs, *rest):
        if rest:  # (labels[, sample weights]): label names become ids
            rest = (_label_tensor(rest[0], preprocessors[0].label_names), *rest[1:])
        many, cut = members_ids(preprocessors, inputs)
        counter.assign_add(tf.math.count_nonzero(tf.maximum(cut["premise"], cut["hypothesis"])))
        return (_model_ids(many, keys, bounded), *rest) if rest else \
            _model_ids(many, keys, bounded)

    dataset = x.map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE), lambda: {"pairs": int(counter.numpy())}


def warn_truncated(cut, what, max_length, hint, stacklevel=3):
    """One `TruncationWarning` saying how many of `what` were cut, if any were.

    Args:
        cut: {side: int [N] tokens cut}, or {"pairs": n} (counted while a dataset ran).
    """
    if set(cut) == {"pairs"}:
        count, total, sides = cut["pairs"], "", ""
    else:
        arrays = {side: np.asarray(values) for side, values in cut.items()}
        count = int(np.sum(np.any(np.stack(list(arrays.values())) > 0, axis=0)))
        total = f" of {len(next(iter(arrays.values())))}"
        sides = ", ".join(f"{side} {int(np.count_nonzero(values))}"
                          for side, values in arrays.items()) if len(arrays) > 1 else ""
    if count:
        limit = f"{max_length} tokens" if max_length else "the model's maximum length"
        warnings.warn(f"{count}{total} {what} were longer than {limit} and were cut to it"
                      f"{f' ({sides})' if sides else ''}: the model read only their first "
                      f"tokens ({hint}).", TruncationWarning, stacklevel=stacklevel)
