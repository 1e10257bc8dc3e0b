"""Fixed random character n-gram vectors of words: the Gaussian Transformer's
character-level representation (Guo, Zhang & Liu, 2019, eq. (6) and "Embedding Blocks").

Each character 5-gram of a word (marked "<word>", so prefixes and suffixes differ from
inner n-grams) has a fixed random vector, drawn from a generator seeded by the n-gram
itself: the same n-gram has the same vector in every vocabulary, on every machine, with
no table of all n-grams to store. A word's vector is the element-wise maximum over its
n-grams' vectors (max-over-time pooling). Nothing here is trained.
"""

import zlib

import numpy as np

NGRAM = 5
# Spread of an n-gram's vector (standard deviation 0.29; its maximum over a word's
# n-grams is larger), near that of a GloVe coordinate (0.69 over the 20,000 most frequent
# words of 6B 50d), so that W_e sees both halves of eq. (9) at a similar scale.
SCALE = 0.5


def ngrams(word, n=NGRAM):
    """The character n-grams of "<word>"; a shorter marked word is its own only n-gram."""
    marked = f"<{word}>"
    if len(marked) <= n:
        return [marked]
    return [marked[i:i + n] for i in range(len(marked) - n + 1)]


def ngram_vector(ngram, dim, seed=0):
    """The fixed vector of one n-gram: float32 [dim], U(-SCALE, SCALE)."""
    key = zlib.crc32(ngram.encode("utf-8")) ^ (seed * 0x9E3779B1 & 0xFFFFFFFF)
    return np.random.default_rng(key).uniform(-SCALE, SCALE, dim).astype("float32")


def char_ngram_vectors(words, dim=30, first_id=2, seed=0, n=NGRAM):
    """Eq. (6) for a whole vocabulary: float32 [first_id + len(words), dim], row
    first_id + i for words[i]; the rows before (padding, unknown word) stay zero."""
    table = np.zeros((first_id + len(words), dim), dtype="float32")
    cache = {}
    for row, word in enumerate(words, start=first_id):
        vectors = []
        for gram in ngrams(word, n):
            if gram not in cache:
                cache[gram] = ngram_vector(gram, dim, seed)
            vectors.append(cache[gram])
        table[row] = np.max(vectors, axis=0)
    return table
