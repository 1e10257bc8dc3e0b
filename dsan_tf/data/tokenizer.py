"""Word tokenization with TensorFlow string ops.

The very same function runs in the `tf.data` training pipeline and inside an exported
SavedModel on raw strings, so serving tokenizes exactly as training did.

Rules (Penn-Treebank-like, as the Stanford tokenizer that produced SNLI's parses; measured
against those parses in docs/FIDELITY.md#tokenization): invalid UTF-8 is replaced by U+FFFD;
letters and digits are Unicode classes, so "café" and "Pokémon" stay whole (TF's regex `\\w`
is ASCII-only); `n't` and the clitics 's 're 've 'll 'd 'm are split off ("don't" -> "do
n't", "dog's" -> "dog 's"), and "cannot" -> "can not"; punctuation becomes its own token,
except word-internal hyphens, slashes, apostrophes and periods ("to-go", "he/she", "U.S.")
and commas and colons between digits ("1,000", "10:30"); a period ending a word before a
space or at the end is split off ("big." -> "big ."), except after the abbreviations of
`ABBREVIATIONS` ("Mr. Smith", "St. Patrick's", "3 ft. deep"); tokens are split on whitespace.

Casing is kept by default: GloVe 840B is cased ("Apple" and "apple" differ). Pass
`lowercase=True` for lower-cased vectors (GloVe 6B, Twitter); the vocabulary records the
choice so serving repeats it.

Shape legend: B texts, None tokens per text (ragged).
"""

from dsan_tf.common.frameworks import tf

# Abbreviations whose period stays with them before a following word (case-insensitive,
# so that lower-cased text keeps them too). Titles, street and place words, units, company
# suffixes and months: the ones found in SNLI and MultiNLI where a split period would make
# a sentence end in the middle of a name.
ABBREVIATIONS = (
    "mr", "mrs", "ms", "dr", "prof", "rev", "hon", "gov", "sen", "rep", "gen", "col", "capt",
    "lt", "sgt", "jr", "sr", "st", "mt", "ft", "rt", "ave", "blvd", "rd", "hwy", "co", "corp",
    "inc", "ltd", "bros", "vs", "etc", "approx", "lbs", "oz", "jan", "feb", "aug", "sept",
    "oct", "nov", "dec")

_WORD = r"\p{L}\p{M}\p{N}_"  # Unicode word characters: RE2's \w is ASCII-only
_KEPT_PERIOD = "\ue000"      # a private-use character standing for an abbreviation's period

_RULES = (
    (r"(^|\s)'", r"\1' "),
    (r"'(\s|$)", r" '\1"),
    (rf"([{_WORD}])n't($|[^{_WORD}])", r"\1 n't\2"),
    (rf"(^|[^{_WORD}])([Cc])annot($|[^{_WORD}])", r"\1\2an not\3"),
    (rf"(?i)([{_WORD}])'(s|re|ve|ll|d|m)($|[^{_WORD}])", r"\1 '\2\3"),
    (rf"([^{_WORD}\s'.,:/\-])", r" \1 "),
    # A comma or colon is a token unless it stands between two digits ("1,000", "10:30").
    (r"([,:])(\D|$)", r" \1 \2"),
    (r"(^|\D)([,:])", r"\1 \2 "),
    (rf"(?i)(^|\s)({'|'.join(ABBREVIATIONS)})\.(\s)", rf"\1\2{_KEPT_PERIOD}\3"),
    (rf"([{_WORD}'][{_WORD}])\.(\s|$)", r"\1 .\2"),
    (r"([^.\s])\.$", r"\1 ."),
    (_KEPT_PERIOD, "."),
    (r"(\s|^)-+|-+(\s|$)", r" - "),
    (r"(\s|^)/+|/+(\s|$)", r" / "),
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
    texts = tf.strings.strip(texts)  # so that "big. " ends in a period like "big."
    if lowercase:
        texts = tf.strings.lower(texts, encoding="utf-8")
    for pattern, rewrite in _RULES:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.split(texts)
