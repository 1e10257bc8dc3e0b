"""Raw text in, predictions out: a trained `NLIClassifier` with its `NLIPreprocessor`.

Used in-process by `experiments.predict` and written as a SavedModel by
`experiments.export`. The lookup layer lives in the preprocessor, around the trained model,
not inside it (lookup layers cannot be XLA-compiled). The exported SavedModel needs
TensorFlow only.

Shape legend: B sentences or pairs, C classes, E sentence-vector width.
"""

import collections
import os
import warnings

import keras
import numpy as np
import tensorflow as tf

from dsan_tf import rundir
from dsan_tf.labels import LABELS


class Predictor:
    """Classifies raw sentence pairs and embeds raw sentences.

    Args:
        model: a trained `dsan_tf.NLIClassifier`.
        preprocessor: the `dsan_tf.data.NLIPreprocessor` it was trained with.
    """

    def __init__(self, model, preprocessor):
        self.model = model
        self.preprocessor = preprocessor

    def classify(self, premise, hypothesis):
        """Args: premise, hypothesis: string [B].

        Returns: dict with `probabilities` float32 [B, C], `label` string [B] (the most
        probable class), `label_names` string [C], and `premise_truncated`,
        `hypothesis_truncated` int32 [B]: how many tokens of each sentence the
        preprocessor's `max_length` cut (0: read whole)."""
        premise_ids, premise_cut = self.preprocessor.dense_ids_and_cut(premise)
        hypothesis_ids, hypothesis_cut = self.preprocessor.dense_ids_and_cut(hypothesis)
        logits = self.model({"premise": premise_ids, "hypothesis": hypothesis_ids},
                            training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        names = tf.constant(LABELS)
        return {"probabilities": probabilities,
                "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
                "label_names": names,
                "premise_truncated": premise_cut, "hypothesis_truncated": hypothesis_cut}

    def encode(self, sentences):
        """Args: sentences: string [B]. Returns: dict with `embedding` float32 [B, E], the
        backbone's sentence vector (4·d_e for DSAN), and `truncated` int32 [B], the tokens
        `max_length` cut. Needs a sentence-encoder backbone."""
        ids, cut = self.preprocessor.dense_ids_and_cut(sentences)
        vectors = self.model.backbone(ids, training=False)
        return {"embedding": tf.cast(vectors, tf.float32), "truncated": cut}

    def export(self, export_dir):
        """Writes a SavedModel with signatures `serving_default` (premise, hypothesis ->
        probabilities, label, label_names) and, for a sentence-encoder backbone, `encode`
        (sentences -> embedding)."""
        archive = keras.export.ExportArchive()
        archive.track(self.model)
        archive.track(self.preprocessor.lookup)
        text = lambda name: tf.TensorSpec([None], tf.string, name=name)  # noqa: E731
        archive.add_endpoint("serving_default", self.classify,
                             input_signature=[text("premise"), text("hypothesis")])
        if not self.model.backbone.pair_input:
            archive.add_endpoint("encode", self.encode, input_signature=[text("sentences")])
        archive.write_out(export_dir, verbose=False)


class EnsemblePredictor:
    """Averages the class probabilities of several trained runs (the ensembles of AF-DMN,
    Section 5.3, and of the Gaussian Transformer). Each member reads the raw text with its
    own preprocessor, so members may differ in model family and vocabulary.

    Args:
        predictors: `Predictor`s whose models share the label order `dsan_tf.LABELS`.
    """

    def __init__(self, predictors):
        if not predictors:
            raise ValueError("an ensemble needs at least one member.")
        self.predictors = list(predictors)

    def classify(self, premise, hypothesis):
        """As `Predictor.classify`, with the members' mean probabilities (and the most
        tokens any member cut)."""
        outputs = [member.classify(premise, hypothesis) for member in self.predictors]
        probabilities = tf.add_n([out["probabilities"] for out in outputs]) / len(outputs)
        names = tf.constant(LABELS)
        cut = {key: tf.reduce_max(tf.stack([out[key] for out in outputs]), axis=0)
               for key in ("premise_truncated", "hypothesis_truncated")}
        return {"probabilities": probabilities,
                "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
                "label_names": names, **cut}

    def export(self, export_dir):
        """Writes one SavedModel whose `serving_default` (premise, hypothesis ->
        probabilities, label, label_names) runs every member; it needs TensorFlow only."""
        archive = keras.export.ExportArchive()
        for member in self.predictors:
            archive.track(member.model)
            archive.track(member.preprocessor.lookup)
        text = lambda name: tf.TensorSpec([None], tf.string, name=name)  # noqa: E731
        archive.add_endpoint("serving_default", self.classify,
                             input_signature=[text("premise"), text("hypothesis")])
        archive.write_out(export_dir, verbose=False)


def version_dir(export_dir, version=None):
    """Where an export goes in TF Serving's layout, EXPORT_DIR/<version>/: `version`, or
    one more than the largest integer-named folder already there (1 for the first)."""
    if version is None:
        taken = [int(name) for name in (os.listdir(export_dir) if os.path.isdir(export_dir)
                                        else []) if name.isdigit()]
        version = max(taken, default=0) + 1
    if int(version) < 1:
        raise ValueError(f"an export version must be a positive integer, got {version}.")
    return os.path.join(export_dir, str(int(version)))


def _newest_version(path):
    versions = [int(name) for name in os.listdir(path)
                if name.isdigit() and os.path.isdir(os.path.join(path, name))]
    return os.path.join(path, str(max(versions))) if versions else path


class TruncationWarning(UserWarning):
    """Some input was longer than the model's `max_length` and was cut to it."""


def _texts(value, what):
    """(list of str, whether `value` was one string) of a string or a sequence of them."""
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        if not text.strip():
            one = {"premises": "premise", "hypotheses": "hypothesis"}.get(what, "sentence")
            raise ValueError(f"the {one} is empty: a sentence needs at least one word.")
        return [text], True
    try:
        texts = list(value)
    except TypeError:
        raise ValueError(f"{what} must be a string or a list of strings, got "
                         f"{type(value).__name__}.") from None
    for index, text in enumerate(texts):
        if isinstance(text, bytes):
            texts[index] = text = text.decode("utf-8")
        elif not isinstance(text, str):
            raise ValueError(f"{what}[{index}] is {type(text).__name__}, not a string.")
        if not text.strip():
            raise ValueError(f"{what}[{index}] is empty: a sentence needs at least one word "
                             "(an empty one would be classified from padding alone).")
    return texts, False


def _warn_truncated(cut, what, max_length, hint):
    """One `TruncationWarning` saying how many of `what` were cut, if any were."""
    cut = {side: np.asarray(values) for side, values in cut.items()}
    count = int(np.sum(np.any(np.stack(list(cut.values())) > 0, axis=0)))
    if count:
        limit = f"{max_length} tokens" if max_length else "the model's maximum length"
        sides = ", ".join(f"{side} {int(np.count_nonzero(values))}"
                          for side, values in cut.items()) if len(cut) > 1 else ""
        warnings.warn(f"{count} of {len(next(iter(cut.values())))} {what} were longer than "
                      f"{limit} and were cut to it{f' ({sides})' if sides else ''}: the model "
                      f"read only their first tokens ({hint}).", TruncationWarning,
                      stacklevel=3)


# Why a model has no sentence vectors (`LoadedModel.encode`), unless it is an ensemble.
PAIR_MODEL = ("a pair model (it reads premise and hypothesis together): it has no sentence "
              "embeddings")


class LoadedModel:
    """A trained model ready for raw text, from `load`.

    Args:
        classify: premise, hypothesis string tensors [B] -> the outputs of
            `Predictor.classify`.
        encode: sentences [B] -> the outputs of `Predictor.encode`, or None (pair models,
            ensembles).
        source: where the model came from (for messages).
        max_length: the preprocessor's truncation length, when known (for messages).
        no_encode: why there is no `encode`, as the end of "SOURCE is ..." (for messages).
    """

    BATCH = 256

    def __init__(self, classify, encode=None, source="", max_length=None,
                 no_encode=PAIR_MODEL):
        self._classify = classify
        self._encode = encode
        self.no_encode = no_encode
        self.source = source
        self.max_length = max_length

    def predict(self, premises, hypotheses):
        """Classifies sentence pairs, in batches of 256.

        Args:
            premises, hypotheses: a string each (one pair), or two equally long lists (or
                other sequences) of strings.

        Returns:
            dict: `probabilities` float32 [B, C]; `labels` list of B label names;
            `label_names` the C class names; `premise_truncated`, `hypothesis_truncated`
            int [B], the tokens of each sentence cut by the model's maximum length (0: read
            whole; absent for a SavedModel exported without them). B is 1 for two strings.
            Cutting any sentence also raises one `TruncationWarning`.

        Raises:
            ValueError: a string beside a list, lists of different lengths, or a value
                that is not text.
        """
        premises, one_premise = _texts(premises, "premises")
        hypotheses, one_hypothesis = _texts(hypotheses, "hypotheses")
        if one_premise != one_hypothesis:
            raise ValueError("give premises and hypotheses both as strings (one pair) or both "
                             "as lists of strings, not a string beside a list.")
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses: "
                             "give one hypothesis per premise.")
        outputs = collections.defaultdict(list)
        names = list(LABELS)
        for start in range(0, len(premises), self.BATCH):
            out = self._classify(tf.constant(premises[start:start + self.BATCH], tf.string),
                                 tf.constant(hypotheses[start:start + self.BATCH], tf.string))
            for key in ("probabilities", "premise_truncated", "hypothesis_truncated"):
                if key in out:
                    outputs[key].append(np.asarray(out[key]))
            names = [name.decode() for name in np.asarray(out["label_names"])]
        result = {key: np.concatenate(chunks) for key, chunks in outputs.items()}
        probabilities = result.pop("probabilities", np.zeros((0, len(names)), "float32"))
        if result:
            _warn_truncated({side.split("_")[0]: values for side, values in result.items()},
                            "pairs", self.max_length,
                            "premise_truncated and hypothesis_truncated count the tokens cut")
        return {"probabilities": probabilities,
                "labels": [names[i] for i in probabilities.argmax(axis=-1)],
                "label_names": names, **result}

    def encode(self, sentences, return_truncated=False):
        """Sentence vectors, in batches of 256 (sentence encoders: DSAN, DiSAN, CBOW).

        Args:
            sentences: a string (one sentence) or a list (or other sequence) of strings.
            return_truncated: also return int [B], the tokens of each sentence cut by the
                model's maximum length.

        Returns:
            float32 [B, E] (B is 1 for a string), or (that, int [B]) with
            `return_truncated`. Cutting any sentence also raises one `TruncationWarning`.
        """
        if self._encode is None:
            raise ValueError(f"{self.source} is {self.no_encode}.")
        sentences, _ = _texts(sentences, "sentences")
        vectors, cut = [], []
        for start in range(0, len(sentences), self.BATCH):
            out = self._encode(tf.constant(sentences[start:start + self.BATCH], tf.string))
            vectors.append(np.asarray(out["embedding"]))
            cut.append(np.asarray(out.get("truncated", np.zeros(len(vectors[-1]), "int32"))))
        vectors = np.concatenate(vectors) if vectors else np.zeros((0, 0), "float32")
        cut = np.concatenate(cut) if cut else np.zeros(0, "int32")
        _warn_truncated({"sentences": cut}, "sentences", self.max_length,
                        "return_truncated=True gives the tokens cut")
        return (vectors, cut) if return_truncated else vectors


def load(path):
    """A `LoadedModel` from a run directory of `experiments.train`, an export of
    `experiments.export` (EXPORT_DIR or one of its versions; the newest by default), or any
    SavedModel with the export's signatures."""
    if not os.path.isdir(path):
        raise ValueError(f"{path} is not a directory: give a run directory or an export.")
    path = _newest_version(path)
    if rundir.model_file(path):
        predictor = Predictor(*rundir.load_model_files(path))
        encode = None if predictor.model.backbone.pair_input else predictor.encode
        return LoadedModel(predictor.classify, encode, path,
                           predictor.preprocessor.max_length)
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        saved = tf.saved_model.load(path)
        classify = saved.signatures["serving_default"]
        encode = saved.signatures.get("encode")
        members = os.path.join(path, rundir.MEMBERS)
        no_encode = (f"an ensemble: it averages its members' probabilities and has no "
                     f"sentence vectors of its own (a member's: dsan_tf.load({members}/1)"
                     ".encode)" if os.path.isdir(members) else PAIR_MODEL)
        return LoadedModel(lambda p, h: classify(premise=p, hypothesis=h),
                           encode and (lambda s: encode(sentences=s)), path,
                           no_encode=no_encode)
    raise ValueError(f"{path} holds neither a trained model ({rundir.BEST} or {rundir.MODEL} "
                     f"with {rundir.PREPROCESSOR}) nor a SavedModel.")
