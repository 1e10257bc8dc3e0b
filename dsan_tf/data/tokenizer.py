"""Word tokenization with TensorFlow string ops.

The very same function runs in the `tf.data` training pipeline and inside an exported
SavedModel on raw strings, so serving tokenizes exactly as training did.

Rules (Penn-Treebank-like, close to nltk's word_tokenize that other implementations used):
invalid UTF-8 is replaced by U+FFFD; `n't` and the clitics 's 're 've 'll 'd 'm are split off
("don't" -> "do n't", "dog's" -> "dog 's"); punctuation other than word-internal hyphens,
apostrophes and periods becomes its own token; a sentence-final period is split off
("big." -> "big ."), while abbreviations inside a sentence stay whole ("U.S. is" -> "U.S.
is"); tokens are split on whitespace.

Casing is kept by default: GloVe 840B is cased ("Apple" and "apple" differ). Pass
`lowercase=True` for lower-cased vectors (GloVe 6B, Twitter); the vocabulary records the
choice so serving repeats it.

Shape legend: B texts, None tokens per text (ragged).
"""

import tensorflow as tf

_RULES = (
    (r"(^|\s)'", r"\1' "),
    (r"'(\s|$)", r" '\1"),
    (r"(\w)n't\b", r"\1 n't"),
    (r"(?i)(\w)'(s|re|ve|ll|d|m)\b", r"\1 '\2"),
    (r"([^\w\s'.\-])", r" \1 "),
    (r"(\w\w)\.(\s|$)", r"\1 .\2"),
    (r"([^.\s])\.$", r"\1 ."),
    (r"(\s|^)-+|-+(\s|$)", r" - "),
)


def tokenize(texts, lowercase=False):
    """Splits texts into word tokens.

    Args:
        texts: string tensor [B] (or anything `tf.constant` accepts).
        lowercase: bool.

    Returns:
        tf.RaggedTensor of strings [B, None].
    """
    texts = tf.strings.unicode_transcode(
        tf.convert_to_tensor(texts, tf.string), "UTF-8", "UTF-8", errors="replace")
    if lowercase:
        texts = tf.strings.lower(texts, encoding="utf-8")
    for pattern, rewrite in _RULES:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.split(texts)
