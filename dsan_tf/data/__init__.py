"""Data: files/TFDS -> examples -> token ids -> batches. Nothing here imports the model.

`read_examples(spec)` -> (examples, report); `Vocabulary.from_examples(examples)`;
`extend_vocabulary(path, vocabulary, words)`; `load_vectors(path, vocabulary)`;
`NLIPreprocessor(vocabulary, max_length).encode(examples)` -> `EncodedPairs`;
`make_dataset(pairs, ...)`.
"""

from dsan_tf.data.embeddings import (
    EmbeddingReport, download_glove, extend_vocabulary, load_vectors)
from dsan_tf.data.examples import DataError, Example
from dsan_tf.data.pipeline import (
    DEFAULT_BUCKETS, DEFAULT_MAX_LENGTH, SORT_CHUNK_BATCHES, EncodedPairs, EncodeReport,
    make_dataset, padding_fraction)
from dsan_tf.data.preprocessor import NLIPreprocessor
from dsan_tf.data.sources import ReadReport, read_examples
from dsan_tf.data.tokenizer import tokenize
from dsan_tf.data.vocabulary import PAD_ID, UNK_ID, Vocabulary

__all__ = [
    "DEFAULT_BUCKETS", "DEFAULT_MAX_LENGTH", "SORT_CHUNK_BATCHES", "DataError",
    "EmbeddingReport", "EncodeReport",
    "EncodedPairs", "Example", "NLIPreprocessor", "PAD_ID", "ReadReport", "UNK_ID",
    "Vocabulary", "download_glove", "extend_vocabulary", "load_vectors", "make_dataset",
    "padding_fraction", "read_examples", "tokenize",
]
