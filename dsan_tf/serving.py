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
