"""The word vocabulary: built from training text, saved into the run directory, reloaded
for evaluation and serving.

Ids: 0 is padding, 1 is the unknown word, 2.. are the training words by falling frequency
(ties alphabetical), so the same data always gives the same ids; words added for their
pre-trained vectors (`Vocabulary.extended`, `dsan_tf.data.extend_vocabulary`) follow.
"""

import hashlib
import json
import os

from dsan_tf.common.frameworks import keras

from dsan_tf.common import atomic
from dsan_tf.data.examples import DataError
from dsan_tf.layers.masks import PAD_ID

UNK_ID = 1
PAD_TOKEN, UNK_TOKEN = "", "[UNK]"
_FORMAT = "dsan_tf.vocabulary/1"


class Vocabulary:
    """Words with their training counts, and the tokenization setting they were made with.

    Args:
        words: the words, id `FIRST_WORD_ID` onwards (padding and unknown are implicit).
        counts: their training counts (for coverage reports); optional.
        lowercase: whether texts are lower-cased before tokenization.
        min_count: the minimum count used to build it (recorded for the run directory).
    """

    PAD_ID, UNK_ID = PAD_ID, UNK_ID
    FIRST_WORD_ID = 2  # the ids before it are padding and the unknown word

    def __init__(self, words, counts=None, lowercase=False, min_count=1):
        self.words = list(words)
        self.counts = list(counts) if counts is not None else [0] * len(self.words)
        self.lowercase = bool(lowercase)
        self.min_count = min_count

    def __len__(self):
        return len(self.words) + self.FIRST_WORD_ID

    def word_ids(self):
        """{word: id} of every word (padding and the unknown word have no entry)."""
        return {word: i + self.FIRST_WORD_ID for i, word in enumerate(self.words)}

    @property
    def size(self):
        """Number of ids, padding and unknown included (the embedding matrix's rows)."""
        return len(self)

    @classmethod
    def build(cls, texts, min_count=1, lowercase=False, chunk_size=100_000):
        """Counts the tokens of `texts` (an iterable of str) and keeps those seen `min_count`+ times."""
        from dsan_tf.common.frameworks import tf  # counting is TensorFlow's (its tokenizer's)

        from dsan_tf.data.tokenizer import tokenize

        texts = list(texts)
        totals = {}
        for start in range(0, len(texts), chunk_size):
            tokens = tokenize(texts[start:start + chunk_size], lowercase=lowercase).flat_values
            unique, _, counts = tf.unique_with_counts(tokens)
            for word, count in zip(unique.numpy(), counts.numpy()):
                totals[word] = totals.get(word, 0) + int(count)
        kept = sorted(((w.decode("utf-8"), c) for w, c in totals.items()
                       if c >= min_count and w.decode("utf-8") not in (PAD_TOKEN, UNK_TOKEN)),
                      key=lambda item: (-item[1], item[0]))
        return cls([w for w, _ in kept], [c for _, c in kept], lowercase, min_count)

    @classmethod
    def from_examples(cls, examples, min_count=1, lowercase=False):
        """`build` over the premises and hypotheses of `Example`s."""
        return cls.build([e.premise for e in examples] + [e.hypothesis for e in examples],
                         min_count=min_count, lowercase=lowercase)

    def extended(self, words):
        """A new vocabulary: these words (with count 0) after the present ones, whose ids
        stay the same."""
        known = set(self.words)
        new = [word for word in dict.fromkeys(words) if word not in known]
        return Vocabulary(self.words + new, self.counts + [0] * len(new), self.lowercase,
                          self.min_count)

    def fingerprint(self):
        """A short hash of everything that decides the ids (for caches keyed by vocabulary)."""
        digest = hashlib.sha256(f"{_FORMAT}|{self.lowercase}|".encode())
        digest.update("\n".join(self.words).encode("utf-8"))
        return digest.hexdigest()[:16]

    def save(self, path):
        atomic.write_text(path, json.dumps({"format": _FORMAT, "lowercase": self.lowercase,
                                            "min_count": self.min_count, "words": self.words,
                                            "counts": self.counts}, ensure_ascii=False))

    @classmethod
    def load(cls, path):
        if not os.path.isfile(path):
            raise DataError(f"vocabulary file {path} does not exist.")
        try:
            with open(path, encoding="utf-8") as stream:
                data = json.load(stream)
            if not isinstance(data, dict) or data.get("format") != _FORMAT:
                raise ValueError(f"no {_FORMAT!r} format tag")
            return cls(data["words"], data["counts"], data["lowercase"], data["min_count"])
        except (ValueError, UnicodeDecodeError, KeyError, TypeError) as error:
            raise DataError(f"{path} is not a dsan_tf vocabulary file ({type(error).__name__}"
                            f": {error}).") from None

    def lookup_layer(self):
        """A `StringLookup` from tokens to ids (0 padding, 1 unknown). Not XLA-compilable:
        use it in `tf.data` or around an exported model (`dsan_tf.data.NLIPreprocessor`),
        not inside the trained model."""
        return keras.layers.StringLookup(
            vocabulary=self.words, mask_token=PAD_TOKEN, oov_token=UNK_TOKEN,
            num_oov_indices=1, output_mode="int")
