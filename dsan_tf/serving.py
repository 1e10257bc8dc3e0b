"""Raw text in, predictions out: a trained `NLIClassifier` with its `NLIPreprocessor`.

Used in-process by `experiments.predict` and written as a SavedModel by
`experiments.export`. The lookup layer lives in the preprocessor, around the trained model,
not inside it (lookup layers cannot be XLA-compiled). The exported SavedModel needs
TensorFlow only.

Shape legend: B sentences or pairs, C classes, E sentence-vector width.
"""

import keras
import tensorflow as tf

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
        probable class) and `label_names` string [C]."""
        logits = self.model(self.preprocessor(premise, hypothesis), training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        names = tf.constant(LABELS)
        return {"probabilities": probabilities,
                "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
                "label_names": names}

    def encode(self, sentences):
        """Args: sentences: string [B]. Returns: dict with `embedding` float32 [B, E], the
        backbone's sentence vector (4·d_e for DSAN). Needs a sentence-encoder backbone."""
        vectors = self.model.backbone(self.preprocessor.dense_ids(sentences), training=False)
        return {"embedding": tf.cast(vectors, tf.float32)}

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
        """As `Predictor.classify`, with the members' mean probabilities."""
        probabilities = tf.add_n([member.classify(premise, hypothesis)["probabilities"]
                                  for member in self.predictors]) / len(self.predictors)
        names = tf.constant(LABELS)
        return {"probabilities": probabilities,
                "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
                "label_names": names}

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
    import os

    if version is None:
        taken = [int(name) for name in (os.listdir(export_dir) if os.path.isdir(export_dir)
                                        else []) if name.isdigit()]
        version = max(taken, default=0) + 1
    if int(version) < 1:
        raise ValueError(f"an export version must be a positive integer, got {version}.")
    return os.path.join(export_dir, str(int(version)))


def _newest_version(path):
    import os

    versions = [int(name) for name in os.listdir(path)
                if name.isdigit() and os.path.isdir(os.path.join(path, name))]
    return os.path.join(path, str(max(versions))) if versions else path


class LoadedModel:
    """A trained model ready for raw text, from `load`.

    `predict(premises, hypotheses)` -> {"probabilities": float32 [B, C], "labels": [B]
    label names, "label_names": [C]}; `encode(sentences)` -> float32 [B, E] for sentence
    encoders (DSAN, DiSAN, CBOW). Both take lists of strings and run in batches of 256.
    """

    BATCH = 256

    def __init__(self, classify, encode=None, source=""):
        self._classify = classify
        self._encode = encode
        self.source = source

    def predict(self, premises, hypotheses):
        import numpy as np

        premises, hypotheses = list(premises), list(hypotheses)
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses.")
        chunks, names = [], None
        for start in range(0, len(premises), self.BATCH):
            out = self._classify(tf.constant(premises[start:start + self.BATCH]),
                                 tf.constant(hypotheses[start:start + self.BATCH]))
            chunks.append(np.asarray(out["probabilities"]))
            names = [name.decode() for name in np.asarray(out["label_names"])]
        probabilities = (np.concatenate(chunks) if chunks
                         else np.zeros((0, len(LABELS)), "float32"))
        names = names or list(LABELS)
        return {"probabilities": probabilities,
                "labels": [names[i] for i in probabilities.argmax(axis=-1)],
                "label_names": names}

    def encode(self, sentences):
        import numpy as np

        if self._encode is None:
            raise ValueError(f"{self.source} is a pair model (it reads premise and hypothesis "
                             "together): it has no sentence embeddings.")
        sentences = list(sentences)
        chunks = [np.asarray(self._encode(tf.constant(sentences[i:i + self.BATCH]))["embedding"])
                  for i in range(0, len(sentences), self.BATCH)]
        return np.concatenate(chunks) if chunks else np.zeros((0, 0), "float32")


def load(path):
    """A `LoadedModel` from a run directory of `experiments.train`, an export of
    `experiments.export` (EXPORT_DIR or one of its versions; the newest by default), or any
    SavedModel with the export's signatures."""
    import os

    import dsan_tf.models  # noqa: F401  (registers the layers for .keras files)
    from dsan_tf.data import NLIPreprocessor

    if not os.path.isdir(path):
        raise ValueError(f"{path} is not a directory: give a run directory or an export.")
    path = _newest_version(path)
    for name in ("best.keras", "model.keras"):
        if (os.path.exists(os.path.join(path, name))
                and os.path.exists(os.path.join(path, "preprocessor.json"))):
            model = keras.models.load_model(os.path.join(path, name), compile=False)
            predictor = Predictor(model, NLIPreprocessor.load(path))
            encode = None if model.backbone.pair_input else predictor.encode
            return LoadedModel(predictor.classify, encode, path)
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        saved = tf.saved_model.load(path)
        classify = saved.signatures["serving_default"]
        encode = saved.signatures.get("encode")
        return LoadedModel(lambda p, h: classify(premise=p, hypothesis=h),
                           encode and (lambda s: encode(sentences=s)), path)
    raise ValueError(f"{path} holds neither a trained model (best.keras or model.keras with "
                     "preprocessor.json) nor a SavedModel.")
