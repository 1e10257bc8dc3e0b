"""Raw sentence pairs -> token ids, one object for training, evaluation and serving.

Shape legend: B pairs or sentences, T tokens (after padding), N examples.
"""

import json
import os

import numpy as np
import tensorflow as tf

from dsan_tf.data import PREPROCESSOR_FILE as SETTINGS_FILE, VOCABULARY_FILE
from dsan_tf.data.examples import DataError
from dsan_tf.data.pipeline import DEFAULT_MAX_LENGTH, EncodedPairs, EncodeReport
from dsan_tf.data.tokenizer import tokenize
from dsan_tf.data.vocabulary import PAD_ID, UNK_ID, Vocabulary


class NLIPreprocessor:
    """The tokenizer (`dsan_tf.data.tokenize`), the vocabulary and the truncation length,
    the text processing a model was trained with.

    The `tf.data` pipeline (`encode`), `experiments.evaluate` and the exported SavedModel
    (`__call__`, traced into it) all map text to ids through the same `token_ids`.

    Args:
        vocabulary: `dsan_tf.data.Vocabulary` (it also fixes lower-casing).
        max_length: truncate sentences to this many tokens; None or 0: never.
    """

    def __init__(self, vocabulary, max_length=DEFAULT_MAX_LENGTH):
        self.vocabulary = vocabulary
        self.max_length = max_length or None
        self.lookup = vocabulary.lookup_layer()
        self.lookup(tf.constant([""]))  # builds it: an unbuilt layer cannot be exported

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
        tokens = tokenize(texts, lowercase=self.lowercase)
        return tf.cast(tokens.with_flat_values(self.lookup(tokens.flat_values)), tf.int32)

    def __call__(self, premise, hypothesis):
        """Args: premise, hypothesis: string [B].

        Returns: the model's inputs {"premise": int32 [B, T1], "hypothesis": int32 [B, T2]},
        truncated to `max_length` and padded, T >= 1 (an all-padding column never changes a
        result)."""
        return {"premise": self.dense_ids(premise), "hypothesis": self.dense_ids(hypothesis)}

    def dense_ids(self, texts):
        """Truncated, padded token ids of `texts` (string [B]): int32 [B, T], T >= 1."""
        return self.dense_ids_and_cut(texts)[0]

    def dense_ids_and_cut(self, texts):
        """(truncated, padded token ids int32 [B, T] with T >= 1, and int32 [B] how many
        tokens of each text were cut by `max_length`: 0 when it was read whole)."""
        ids = self.token_ids(texts)
        cut = tf.zeros_like(ids.row_lengths(), tf.int32)
        if self.max_length:
            cut = tf.cast(tf.maximum(ids.row_lengths() - self.max_length, 0), tf.int32)
            ids = ids[:, :self.max_length]
        ids = ids.to_tensor(PAD_ID)
        return tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]]), cut

    def encode(self, examples):
        """Token ids of `examples` (a list of `dsan_tf.data.Example`), truncated to
        `max_length`, with an `EncodeReport` counting unknown and truncated tokens.

        Returns: `EncodedPairs` (ragged int32 [N, None] per side, labels int32 [N])."""
        report = EncodeReport(examples=len(examples), max_length=self.max_length)
        sides = []
        for side in ("premise", "hypothesis"):
            ids = self.token_ids([getattr(e, side) for e in examples])
            lengths = ids.row_lengths()
            report.tokens += int(tf.size(ids.flat_values))
            report.unknown_tokens += int(tf.reduce_sum(
                tf.cast(ids.flat_values == UNK_ID, tf.int32)))
            report.longest = max(report.longest,
                                 int(tf.reduce_max(lengths)) if len(examples) else 0)
            if self.max_length:
                setattr(report, f"truncated_{side}s",
                        int(tf.reduce_sum(tf.cast(lengths > self.max_length, tf.int32))))
                ids = ids[:, :self.max_length]
            sides.append(ids)
        labels = np.array([e.label for e in examples], dtype=np.int32)
        return EncodedPairs(sides[0], sides[1], labels, report)

    def save(self, directory):
        """Writes `vocab.json` and `preprocessor.json` into `directory`."""
        self.vocabulary.save(os.path.join(directory, VOCABULARY_FILE))
        with open(os.path.join(directory, SETTINGS_FILE), "w", encoding="utf-8") as stream:
            json.dump({"max_length": self.max_length}, stream)

    @classmethod
    def load(cls, directory):
        """The preprocessor `save` wrote into `directory`."""
        vocabulary = Vocabulary.load(os.path.join(directory, VOCABULARY_FILE))
        settings_path = os.path.join(directory, SETTINGS_FILE)
        try:
            with open(settings_path, encoding="utf-8") as stream:
                settings = json.load(stream)
            return cls(vocabulary, settings["max_length"])
        except FileNotFoundError:
            raise DataError(f"{settings_path} does not exist.") from None
        except (ValueError, KeyError, TypeError) as error:
            raise DataError(f"{settings_path} is not a preprocessor file ({error}).") from None
