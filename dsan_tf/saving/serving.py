"""Raw text in, predictions out: `load` (a trained model from wherever it lives) and
`export` (a SavedModel of raw strings that needs TensorFlow only).

Text reaches a Keras model one way: `NLIClassifier.predict/encode` (and an ensemble's
`predict`) run the model's preprocessor in `tf.data` (`dsan_tf.data.preprocessor`); `load`
is the one-liner over them. The exported SavedModel traces the same preprocessor functions
(`dense_ids_and_cut`) around the model; the lookup layer stays outside the trained model
(lookup layers cannot be XLA-compiled).

Shape legend: B sentences or pairs, C classes, E sentence-vector width.
"""

import os

from dsan_tf.common.frameworks import keras
import numpy as np
from dsan_tf.common.frameworks import tf

from dsan_tf.data.preprocessor import (PREDICTION_BATCH_SIZE, TruncationWarning, dense,
                                       label_ids, members_ids, pair_texts, texts,
                                       warn_truncated)
from dsan_tf.common.errors import require_tensorflow_backend
from dsan_tf.common.labels import LABELS, labelled
from dsan_tf.models import preset
from dsan_tf.models.ensemble import NLIEnsemble
from dsan_tf.models.nli_classifier import PAIR_MODEL

__all__ = ["SavedModelClassifier", "TruncationWarning", "export", "load", "version_dir"]


def _serving_outputs(model, premise, hypothesis):
    """The SavedModel's `serving_default`: premise, hypothesis string [B] -> dict with
    `probabilities` float32 [B, C], `label` string [B], `label_names` string [C] and
    `premise_truncated`, `hypothesis_truncated` int32 [B] (tokens cut; for an ensemble,
    the most any member cut)."""
    many, cut = members_ids(model.preprocessors(), {"premise": premise,
                                                    "hypothesis": hypothesis})
    inputs = [{side: dense(ids) for side, ids in sides.items()} for sides in many]
    keys = model.input_keys()
    logits = model(inputs[0] if keys is None else dict(zip(keys, inputs)), training=False)
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    names = tf.constant(model.label_names)
    return {"probabilities": probabilities,
            "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
            "label_names": names,
            "premise_truncated": cut["premise"], "hypothesis_truncated": cut["hypothesis"]}


def export(model, export_dir, keras_file=True):
    """Writes a SavedModel of `model` (an `NLIClassifier` with its preprocessor, or an
    `NLIEnsemble`) with the signature `serving_default` (premise, hypothesis ->
    `_serving_outputs`), the endpoint `serve_pairs` (the same of one dict {"premise",
    "hypothesis"}, for `keras.layers.TFSMLayer`) and, for a sentence encoder, `encode`
    (sentences -> `embedding` float32 [B, E], `truncated` int32 [B]); and, with
    `keras_file`, the Keras model beside it (model.keras), so that `load` and
    `NLIClassifier.from_preset` read the export back as the model it was. The SavedModel
    serves: it holds no gradients (fine-tune from model.keras)."""
    require_tensorflow_backend("dsan_tf.saving.serving.export")
    archive = keras.export.ExportArchive()
    archive.track(model)
    for preprocessor in model.preprocessors():
        archive.track(preprocessor.lookup)
    text = lambda name: tf.TensorSpec([None], tf.string, name=name)  # noqa: E731
    archive.add_endpoint("serving_default",
                         lambda premise, hypothesis: _serving_outputs(model, premise,
                                                                      hypothesis),
                         input_signature=[text("premise"), text("hypothesis")])
    # The same, taking one dict: `keras.layers.TFSMLayer(dir, call_endpoint="serve_pairs")`
    # is then called as a Keras model is, layer({"premise": ..., "hypothesis": ...})
    # (serving_default takes them as two arguments).
    archive.add_endpoint("serve_pairs",
                         lambda pairs: _serving_outputs(model, pairs["premise"],
                                                        pairs["hypothesis"]),
                         input_signature=[{"premise": text("premise"),
                                           "hypothesis": text("hypothesis")}])
    if not isinstance(model, NLIEnsemble) and not model.backbone.pair_input:
        def encode(sentences):
            ids, cut = model.preprocessor.dense_ids_and_cut(sentences)
            return {"embedding": tf.cast(model.backbone(ids, training=False), tf.float32),
                    "truncated": cut}

        archive.add_endpoint("encode", encode, input_signature=[text("sentences")])
    # Serving needs no gradients: saving the LayerNorms' custom gradients traced each of
    # them once more per endpoint (an export 13.1 s -> 10.2 s, its load 2.1 -> 1.4 s, for
    # a small DSAN). Training reads model.keras.
    archive.write_out(export_dir, verbose=False, options=tf.saved_model.SaveOptions(
        experimental_custom_gradients=False))
    if keras_file:
        model.save(os.path.join(export_dir, preset.MODEL_FILES[1]))


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


class SavedModelClassifier:
    """A SavedModel of `dsan-export` read without its Keras file (or any SavedModel with
    its signatures), from `load`: its signatures behind the task model's text methods,
    `predict`, `classify`, `evaluate` and `encode`. Where the Keras file is there, `load`
    gives the Keras model itself.

    Args:
        signatures: {"serving_default": ..., "encode": ... or None}.
        source: where the SavedModel came from (for messages).

    Examples:
    ```python
    import tempfile

    import dsan_tf
    from dsan_tf.saving import serving

    model = dsan_tf.load("dsan_snli25k_glove50")  # a shipped preset: its Keras model
    export = tempfile.mkdtemp()
    serving.export(model, export, keras_file=False)  # the SavedModel alone
    # A SavedModel runs its graph as it loads: read only one you trust.
    served = dsan_tf.load(export, trust_savedmodel=True)  # a SavedModelClassifier
    served.classify("A man is playing a guitar.", "A person makes music.")["labels"]
    ```
    """

    max_length = None  # the signatures do not say (their outputs count what they cut)

    def __init__(self, signatures, source=""):
        self.signatures = signatures
        self.source = source

    def predict(self, x):
        """Class probabilities float32 [B, C] of sentence pairs, taken as the task model's
        `predict` takes text: {"premise": [...], "hypothesis": [...]}, a tuple (premises,
        hypotheses) or a pandas DataFrame with those columns."""
        premises, hypotheses, _ = pair_texts(x)
        return self._signature_predict(premises, hypotheses)[0]

    def classify(self, premises, hypotheses=None):
        """As the task model's `classify` (`TextModel.classify`); the tokens cut are there
        when the SavedModel exports them."""
        premises, hypotheses, _ = pair_texts(premises, hypotheses)
        probabilities, cut, names = self._signature_predict(premises, hypotheses)
        return labelled(probabilities, names, **cut)

    def evaluate(self, x, y):
        """Accuracy and loss on labelled pairs.

        Args:
            x: the pairs, as `predict` takes them.
            y: their labels, as ids or the model's label names.

        Returns:
            dict: `accuracy` (of the argmax) and `loss` (mean cross-entropy of the
            probabilities), floats; `pairs`, how many.
        """
        premises, hypotheses, _ = pair_texts(x)
        probabilities, _, names = self._signature_predict(premises, hypotheses)
        return scores(probabilities, y, names)

    def _signature_predict(self, premises, hypotheses):
        """(probabilities [N, C], {side_truncated: int [N]} where exported, the C label
        names the SavedModel gives; NLI's three when it was given no pair)."""
        classify, parts, names = self.signatures["serving_default"], {}, LABELS
        for start in range(0, len(premises), PREDICTION_BATCH_SIZE):
            out = classify(premise=tf.constant(premises[start:start + PREDICTION_BATCH_SIZE]),
                           hypothesis=tf.constant(hypotheses[start:start +
                                                             PREDICTION_BATCH_SIZE]))
            names = [name.decode("utf-8") for name in np.asarray(out["label_names"])]
            for key in ("probabilities", "premise_truncated", "hypothesis_truncated"):
                if key in out:
                    parts.setdefault(key, []).append(np.asarray(out[key]))
        result = {key: np.concatenate(chunks) for key, chunks in parts.items()}
        probabilities = result.pop("probabilities", np.zeros((0, len(names)), "float32"))
        if result:
            warn_truncated({key.split("_")[0]: values for key, values in result.items()},
                           "pairs", None, "premise_truncated and hypothesis_truncated count "
                           "the tokens cut")
        return probabilities, result, list(names)

    def encode(self, sentences, return_truncated=False):
        """Sentence vectors (sentence encoders: DSAN, DiSAN, CBOW), in batches of
        `PREDICTION_BATCH_SIZE`.

        Args:
            sentences: a string (one sentence) or a list (or other sequence) of strings.
            return_truncated: also return int [B], the tokens of each sentence cut by the
                model's maximum length.

        Returns:
            float32 [B, E] (B is 1 for a string), or (that, int [B]) with
            `return_truncated`. Cutting any sentence also raises one `TruncationWarning`.
        """
        encode = self.signatures.get("encode")
        if encode is None:
            raise ValueError(f"{self.source} is {PAIR_MODEL}.")
        sentences, _ = texts(sentences, "sentences")
        vectors, cut = [], []
        for start in range(0, len(sentences), PREDICTION_BATCH_SIZE):
            out = encode(sentences=tf.constant(sentences[start:start + PREDICTION_BATCH_SIZE]))
            vectors.append(np.asarray(out["embedding"]))
            cut.append(np.asarray(out.get("truncated", np.zeros(len(vectors[-1]), "int32"))))
        vectors = np.concatenate(vectors) if vectors else np.zeros((0, 0), "float32")
        cut = np.concatenate(cut) if cut else np.zeros(0, "int32")
        warn_truncated({"sentences": cut}, "sentences", None,
                       "return_truncated=True gives the tokens cut")
        return (vectors, cut) if return_truncated else vectors


def scores(probabilities, y, names):
    """{"accuracy", "loss", "pairs"} of class probabilities [B, C] against labels `y` (ids
    or the C label `names`): the argmax's accuracy and the mean cross-entropy, as
    floats."""
    labels = label_ids(y, len(probabilities), names)
    chosen = probabilities[np.arange(len(labels)), labels]
    return {"accuracy": float(np.mean(probabilities.argmax(axis=-1) == labels))
            if len(labels) else 0.0,
            "loss": float(-np.mean(np.log(np.maximum(chosen, 1e-12)))) if len(labels) else 0.0,
            "pairs": len(labels)}


def load(path, trust_savedmodel=False):
    """The trained model at `path`, ready for raw text: a preset (a directory, or the name
    of a trained preset this package ships: `dsan_tf.presets()`), a run directory of
    `dsan-train`, an export of `dsan-export` (EXPORT_DIR or one of its versions; the
    newest by default), an ensemble's or a `.keras` file. Returns its Keras task model
    (`NLIClassifier` or `NLIEnsemble`, compiled as it was trained, as
    `NLIClassifier.from_preset` gives it),
    whose `predict`, `classify`, `evaluate` and `encode` take text; for a SavedModel
    without its Keras file, a `SavedModelClassifier` with the same methods, where
    `trust_savedmodel` says so.

    Only a `.keras` file and its preprocessor are read by default, under Keras' safe mode:
    no code in a file runs. A SavedModel is a program (TensorFlow's security model: its
    graph runs as it loads, and can read and write files), so a folder holding only one is
    refused unless `trust_savedmodel=True` names it trusted, as `safe_mode=False` does
    for a `.keras` file; a manifest of hashes would be no defence, anyone can write one."""
    path = preset.locate(path)
    try:
        return preset.load(path)
    except preset.NoModelFiles:
        pass  # no Keras model there: perhaps a SavedModel (a damaged one is said above)
    newest = preset.newest_version(path)
    if os.path.exists(os.path.join(newest, "saved_model.pb")):
        if not trust_savedmodel:
            raise preset.NoModel(
                f"{newest} holds a SavedModel without its model.keras and preprocessor; a "
                "SavedModel is a program that runs as it loads, so it is read only where you "
                "trust it: trust_savedmodel=True (--trust_savedmodel).",
                fields=("trust_savedmodel",))
        saved = tf.saved_model.load(newest)
        return SavedModelClassifier({"serving_default": saved.signatures["serving_default"],
                                     "encode": saved.signatures.get("encode")}, source=newest)
    raise ValueError(f"{newest} holds neither a trained model (a preset, best.keras or "
                     "model.keras with its preprocessor) nor a SavedModel.")
