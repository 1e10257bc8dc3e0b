"""Tokenizer, vocabulary and word vectors."""

import gzip
import pathlib
import urllib.error
import zipfile

import numpy as np
import pytest
import tensorflow as tf

from dsan_tf.data import (
    DataError, NLIPreprocessor, Vocabulary, download_glove, extend_vocabulary, load_vectors,
    tokenize)
from dsan_tf.data import embeddings as embeddings_module

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def words(text, **kwargs):
    return [t.decode() for t in tokenize([text], **kwargs).to_list()[0]]


@pytest.mark.parametrize("text, expected", [
    ("A man's dog doesn't bark, (ever)!",
     ["A", "man", "'s", "dog", "does", "n't", "bark", ",", "(", "ever", ")", "!"]),
    ("The U.S. is big.", ["The", "U.S.", "is", "big", "."]),
    ("to-go packages - \"quoted\"", ["to-go", "packages", "-", '"', "quoted", '"']),
    ("Two  women\tare embracing.", ["Two", "women", "are", "embracing", "."]),
    ("", []),
    # Letters are Unicode letters: accented words stay whole (TF's \\w is ASCII-only).
    ("Pokémon at the café in Zürich, naïve.",
     ["Pokémon", "at", "the", "café", "in", "Zürich", ",", "naïve", "."]),
    # Abbreviations keep their period inside a sentence, as the Stanford tokenizer does.
    ("Mr. Smith and Dr. Who on St. Patrick's Day in a 3 ft. pool.",
     ["Mr.", "Smith", "and", "Dr.", "Who", "on", "St.", "Patrick", "'s", "Day", "in", "a", "3",
      "ft.", "pool", "."]),
    ("He cannot pay 1,000 dollars at 10:30, he/she said: no. ",
     ["He", "can", "not", "pay", "1,000", "dollars", "at", "10:30", ",", "he/she", "said", ":",
      "no", "."]),
    ("ports don't. ", ["ports", "do", "n't", "."]),
])
def test_tokenizer(text, expected):
    assert words(text) == expected


def test_tokenizer_lowercases_unicode_and_keeps_abbreviations():
    assert words("MR. ÉCLAIR ATE.", lowercase=True) == ["mr.", "éclair", "ate", "."]


@pytest.mark.skipif(not (SHARED / "snli" / "snli_1.0_dev.jsonl.gz").exists(),
                    reason="needs ../shared/data")
def test_tokenizer_agrees_with_the_stanford_parses_of_snli_dev():
    """The SNLI parses' leaves are the tokenization the dataset was annotated with."""
    from experiments import tokenizer_agreement

    snli, _ = tokenizer_agreement.measure(str(SHARED / "snli" / "snli_1.0_dev.jsonl.gz"))
    assert snli["agreement"] >= 0.999 and snli["letter_splits"] == 0
    multinli, _ = tokenizer_agreement.measure(
        str(SHARED / "multinli" / "multinli_1.0_dev_matched.jsonl.gz"))
    assert multinli["letter_splits"] == 0


def test_letter_splits_finds_accents_split_out_of_words():
    from experiments.tokenizer_agreement import letter_splits

    assert letter_splits("the café", ["the", "caf", "é"]) == [("caf", "é")]
    assert letter_splits("don't cannot", ["do", "n't", "can", "not"]) == []


def test_tokenizer_casing_and_bad_bytes():
    assert words("The Cat") == ["The", "Cat"]  # GloVe 840B is cased
    assert words("The Cat", lowercase=True) == ["the", "cat"]
    assert words(b"bad \xff byte") == ["bad", "\ufffd", "byte"]


def test_tokenizer_is_the_same_inside_a_graph():
    graph_tokenize = tf.function(lambda t: tokenize(t).to_tensor(""))
    texts = ["A man's dog doesn't bark.", "Hi"]
    np.testing.assert_array_equal(graph_tokenize(tf.constant(texts)).numpy(),
                                  tokenize(texts).to_tensor("").numpy())


TEXTS = ["the dog chased the cat .", "the cat sat", "a dog [UNK] barked"]


def test_vocabulary_ids_are_frequency_ordered_with_padding_and_unknown():
    vocab = Vocabulary.build(TEXTS)
    assert vocab.words[:3] == ["the", "cat", "dog"]  # 3, 2, 2: ties alphabetical
    assert "[UNK]" not in vocab.words and vocab.size == len(vocab.words) + 2
    ids = NLIPreprocessor(vocab).token_ids(["the cat zebra", ""]).to_list()
    assert ids == [[2, 3, 1], []]
    assert Vocabulary.build(TEXTS, min_count=2).words == ["the", "cat", "dog"]


def test_vocabulary_round_trips_and_fingerprints(tmp_path):
    vocab = Vocabulary.build(TEXTS, lowercase=True, min_count=1)
    vocab.save(tmp_path / "vocab.json")
    loaded = Vocabulary.load(tmp_path / "vocab.json")
    assert (loaded.words, loaded.counts, loaded.lowercase) == (vocab.words, vocab.counts, True)
    assert loaded.fingerprint() == vocab.fingerprint()
    assert Vocabulary.build(TEXTS).fingerprint() != vocab.fingerprint()  # casing differs
    (tmp_path / "junk.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="is not a dsan_tf vocabulary file"):
        Vocabulary.load(tmp_path / "junk.json")
    with pytest.raises(DataError, match="does not exist"):
        Vocabulary.load(tmp_path / "missing.json")


GLOVE_LINES = [
    "the 1 1 1",
    "cat 2 2 2",
    ". . . 3 3 3",  # 840B has words with spaces
    "broken 1 2",   # too few numbers: counted, skipped
    "Dog 4 4 4",
    "dog 5 5 5",
]


def write_glove(path):
    text = "\n".join(GLOVE_LINES) + "\n"
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as stream:
            stream.write(text)
    elif str(path).endswith(".zip"):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("vectors.txt", text)
    else:
        path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name", ["vectors.txt", "vectors.txt.gz", "vectors.zip"])
def test_vectors_for_the_vocabulary(tmp_path, name):
    vocab = Vocabulary(["the", "cat", "Dog", "zebra", ". . .", "Cat"], counts=[5, 3, 2, 1, 1, 1])
    matrix, report = load_vectors(write_glove(tmp_path / name), vocab, progress=False)
    assert matrix.shape == (8, 3) and matrix.dtype == np.float32
    assert np.all(matrix[0] == 0)                        # padding
    np.testing.assert_array_equal(matrix[[2, 3, 4, 6]], [[1] * 3, [2] * 3, [4] * 3, [3] * 3])
    np.testing.assert_array_equal(matrix[7], [2] * 3)   # "Cat" falls back to "cat"
    assert np.all(np.abs(matrix[[1, 5]]) <= 0.05) and np.any(matrix[5] != 0)  # unk, zebra
    assert (report.types_found, report.vocab_types) == (5, 6)
    assert (report.tokens_found, report.tokens_total) == (12, 13)
    assert report.malformed_lines == 1 and report.dim == 3
    zeros, _ = load_vectors(write_glove(tmp_path / name), vocab, oov_init="zeros",
                            progress=False)
    assert np.all(zeros[[1, 5]] == 0)


def test_vectors_are_cached_and_read_once(tmp_path, monkeypatch):
    vocab = Vocabulary(["the", "cat"], counts=[2, 1])
    path = write_glove(tmp_path / "vectors.txt")
    first, report = load_vectors(path, vocab, cache_dir=tmp_path / "cache", progress=False)
    assert not report.from_cache and pathlib.Path(report.cache_path).exists()

    def no_read(*args):
        raise AssertionError("the vector file was read again")

    monkeypatch.setattr(embeddings_module, "_open_lines", no_read)
    second, report = load_vectors(path, vocab, cache_dir=tmp_path / "cache", progress=False)
    assert report.from_cache and report.types_found == 2
    np.testing.assert_array_equal(first, second)
    with pytest.raises(AssertionError):  # another vocabulary is another cache entry
        load_vectors(path, Vocabulary(["cat"]), cache_dir=tmp_path / "cache", progress=False)


def test_vector_file_errors(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="does not exist .*--embeddings=random"):
        load_vectors(str(tmp_path / "none.txt"), Vocabulary(["a"]))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(embeddings_module.urllib.request, "urlopen", offline)
    with pytest.raises(DataError, match="could not download .*glove.840B.300d.zip"):
        download_glove(directory=str(tmp_path))


def test_shared_glove_file():
    path = SHARED / "glove" / "glove.twitter.27B.25d.top12k.txt"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    vocab = Vocabulary.build(["the dog chased the cat", "qwertyzzz"], lowercase=True)
    matrix, report = load_vectors(str(path), vocab, progress=False)
    assert matrix.shape == (vocab.size, 25)
    # "chased" is not among its 12k words.
    assert (report.types_found, report.tokens_found, report.tokens_total) == (3, 4, 6)


def test_words_the_vectors_cover_are_never_unknown(tmp_path, monkeypatch):
    """With frozen vectors, a dev/test word outside the training data keeps its vector."""
    path = write_glove(tmp_path / "vectors.txt")  # the cat ". . ." Dog dog
    training = Vocabulary.build(["the the cat"])
    extended, added = extend_vocabulary(path, training, ["dog", "zebra", "the"],
                                        cache_dir=tmp_path / "cache", progress=False)
    assert extended.words == ["the", "cat", "dog"] and added == {"from_data": 1,
                                                                  "from_vectors": 0}
    assert extended.counts == [2, 1, 0]  # training ids and counts unchanged
    assert NLIPreprocessor(extended).token_ids(["the dog zebra"]).to_list() == [[2, 4, 1]]
    matrix, _ = load_vectors(path, extended, progress=False)
    np.testing.assert_array_equal(matrix[4], [5] * 3)
    # A cased vocabulary takes a word the file has only lower-cased ("Cat" -> "cat").
    cased, _ = extend_vocabulary(path, Vocabulary.build(["the"]), ["Cat", "Zebra"],
                                 progress=False)
    assert cased.words == ["the", "Cat"]
    # The file's first words, for text no split holds; the cache spares a second read.
    top, added = extend_vocabulary(path, training, ["dog"], top_words=4,
                                   cache_dir=tmp_path / "cache", progress=False)
    assert top.words == ["the", "cat", "dog", ". . .", "Dog"]
    assert added == {"from_data": 1, "from_vectors": 2}
    monkeypatch.setattr(embeddings_module, "_open_lines", None)
    again, _ = extend_vocabulary(path, training, ["dog"], top_words=4,
                                 cache_dir=tmp_path / "cache", progress=False)
    assert again.words == top.words


@pytest.mark.skipif(not (SHARED / "snli" / "snli_1.0_train_25k.jsonl.gz").exists(),
                    reason="needs ../shared/data")
def test_snli_dev_oov_rate_with_glove_6b():
    """Measured before the vocabulary was extended: 1.06% of SNLI dev tokens were [UNK],
    0.78 points of them words GloVe has."""
    from dsan_tf.data import read_examples

    train, _ = read_examples(str(SHARED / "snli" / "snli_1.0_train_25k.jsonl.gz"))
    dev, _ = read_examples(str(SHARED / "snli" / "snli_1.0_dev.jsonl.gz"))
    vocab, _ = extend_vocabulary(str(SHARED / "glove" / "glove.6B.50d.top100k.txt.gz"),
                                 Vocabulary.from_examples(train, lowercase=True),
                                 Vocabulary.from_examples(dev, lowercase=True).words,
                                 progress=False)
    assert NLIPreprocessor(vocab).encode(dev).report.oov_rate <= 0.0056


def test_the_encode_report_counts_unknown_words_and_truncation_exactly():
    """What evaluate and train print for a split: 2 unknown tokens of 11 ("zebra",
    "unicorn"), the longest sentence, and the sentences max_length cut, per side."""
    from dsan_tf.data import Example

    vocabulary = Vocabulary(["the", "dog", "cat", "saw", "a"])
    examples = [Example("the dog saw a zebra", "a cat", 0),
                Example("the cat", "a unicorn saw the dog", 1)]
    report = NLIPreprocessor(vocabulary, max_length=4).encode(examples).report
    assert (report.tokens, report.unknown_tokens, report.longest) == (14, 2, 5)
    assert report.oov_rate == pytest.approx(2 / 14)
    assert (report.truncated_premises, report.truncated_hypotheses) == (1, 1)
