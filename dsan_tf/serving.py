"""Raw text in, predictions out: the trained model wrapped with tokenizer and vocabulary.

Used in-process by `experiments.predict` and written as a SavedModel by
`experiments.export`. The lookup layer lives here, around the trained model, not inside it
(lookup layers cannot be XLA-compiled). The exported SavedModel needs TensorFlow only.

Shape legend: B sentences or pairs, C classes, E sentence-vector width.
"""

import keras
import tensorflow as tf

from dsan_tf.data.vocabulary import PAD_ID, token_ids
from dsan_tf.labels import LABELS
from dsan_tf.model import EMBEDDING_LAYER, ENCODER_LAYER


class TextPairClassifier:
    """A trained pair model plus the text processing it was trained with.

    Args:
        model: a model from `dsan_tf.build_model`.
        vocabulary: the run's `dsan_tf.data.Vocabulary`.
        max_length: truncate sentences to this many tokens (None: never), as in training.
    """

    def __init__(self, model, vocabulary, max_length=None):
        self.model = model
        self.lookup = vocabulary.lookup_layer()
        self.lookup(tf.constant([""]))  # builds it: an unbuilt layer cannot be exported
        self.lowercase = vocabulary.lowercase
        self.max_length = max_length
        self.embedding = model.get_layer(EMBEDDING_LAYER)
        self.encoder = model.get_layer(ENCODER_LAYER)

    def ids(self, texts):
        """int32 [B, T] token ids, T >= 1 (an all-padding column never changes a result)."""
        ids = token_ids(texts, self.lookup, self.lowercase)
        if self.max_length:
            ids = ids[:, :self.max_length]
        ids = ids.to_tensor(PAD_ID)
        return tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])

    def classify(self, premise, hypothesis):
        """Args: premise, hypothesis: string [B].

        Returns: dict with `probabilities` float32 [B, C], `label` string [B] (the most
        probable class) and `label_names` string [C]."""
        logits = self.model({"premise": self.ids(premise), "hypothesis": self.ids(hypothesis)},
                            training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        names = tf.constant(LABELS)
        return {"probabilities": probabilities,
                "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
                "label_names": names}

    def encode(self, sentences):
        """Args: sentences: string [B]. Returns: dict with `embedding` float32 [B, E], the
        sentence encoder's vector (4·d_e for DSAN)."""
        ids = self.ids(sentences)
        vectors = self.encoder(self.embedding(ids), padding_mask=tf.not_equal(ids, PAD_ID),
                               training=False)
        return {"embedding": tf.cast(vectors, tf.float32)}

    def export(self, export_dir):
        """Writes a SavedModel with signatures `serving_default` (premise, hypothesis ->
        probabilities, label, label_names) and `encode` (sentences -> embedding)."""
        archive = keras.export.ExportArchive()
        archive.track(self.model)
        archive.track(self.lookup)
        text = lambda name: tf.TensorSpec([None], tf.string, name=name)  # noqa: E731
        archive.add_endpoint("serving_default", self.classify,
                             input_signature=[text("premise"), text("hypothesis")])
        archive.add_endpoint("encode", self.encode, input_signature=[text("sentences")])
        archive.write_out(export_dir, verbose=False)
