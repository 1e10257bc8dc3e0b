"""Data: files/TFDS -> examples -> token ids -> batches. Nothing here imports the model.

`read_examples(spec)` -> (examples, report); `Vocabulary.from_examples(examples)`;
`extend_vocabulary(path, vocabulary, words)`; `load_vectors(path, vocabulary)`;
`NLIPreprocessor(vocabulary, max_length).encode(examples)` -> `EncodedPairs`;
`make_dataset(pairs, ...)`.

Names load on first use: reading files (`sources`, `examples`, `synthetic`) and the
character n-grams need no TensorFlow; the tokenizer, vocabulary lookup and `tf.data`
batches do.
"""

import importlib

# The preprocessor's two files (`NLIPreprocessor.save`), in a run directory and an export.
VOCABULARY_FILE, PREPROCESSOR_FILE = "vocab.json", "preprocessor.json"

# name -> module of dsan_tf.data that defines it
_EXPORTS = {
    "EmbeddingReport": "embeddings", "download_glove": "embeddings",
    "extend_vocabulary": "embeddings", "load_vectors": "embeddings",
    "DataError": "examples", "Example": "examples",
    "DEFAULT_BUCKETS": "pipeline", "DEFAULT_MAX_LENGTH": "pipeline",
    "SORT_CHUNK_BATCHES": "pipeline", "EncodedPairs": "pipeline", "EncodeReport": "batching",
    "make_dataset": "pipeline", "padding_fraction": "pipeline",
    "NLIPreprocessor": "preprocessor",
    "ReadReport": "sources", "read_examples": "sources",
    "tokenize": "tokenizer",
    "PAD_ID": "vocabulary", "UNK_ID": "vocabulary", "Vocabulary": "vocabulary",
}

__all__ = sorted([*_EXPORTS, "PREPROCESSOR_FILE", "VOCABULARY_FILE"])


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"dsan_tf.data.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'dsan_tf.data' has no attribute {name!r}")
