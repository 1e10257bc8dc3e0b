"""Pre-trained word vectors (GloVe text format) for a vocabulary, cached after the first read.

`glove.840B.300d.txt` is 5.6 GB: it is streamed once, only vocabulary words are kept, and the
resulting [V, D] matrix is cached as `.npz` under a key made of the vocabulary fingerprint
and the source file's path, size and modification time, so later runs load it in a second.

`extend_vocabulary` adds the words the file has beyond the training words (those of the
other splits, and optionally the file's most frequent ones), since with frozen vectors such a
word is as well represented as a training word. Words missing from the vectors (and the
unknown-word row) are drawn from U(-0.05, 0.05) with a
fixed seed (`oov_init="random"`, DiSAN's choice): with frozen embeddings, distinct vectors keep
unknown words distinguishable, where zeros would merge them into one. `oov_init="zeros"` is
the PyTorch re-implementation's choice. Row 0 (padding) is always zero. A cased vocabulary
word that is missing falls back to its lower-cased vector when the file has one.
"""

import dataclasses
import gzip
import hashlib
import json
import os
import urllib.error
import urllib.request
import zipfile

import numpy as np

from dsan_tf.common import atomic
from dsan_tf.data.examples import DataError
from dsan_tf.data.vocabulary import PAD_ID

GLOVE_URLS = {"glove.840B.300d": "https://nlp.stanford.edu/data/glove.840B.300d.zip"}
OOV_INITS = ("random", "zeros")


@dataclasses.dataclass
class EmbeddingReport:
    source: str
    dim: int
    vocab_types: int
    types_found: int
    tokens_total: int
    tokens_found: int
    malformed_lines: int = 0
    cache_path: str = ""
    from_cache: bool = False

    def summary(self):
        types = self.types_found / max(self.vocab_types, 1)
        tokens = self.tokens_found / max(self.tokens_total, 1)
        text = (f"{os.path.basename(self.source)}: {self.dim}-d vectors for "
                f"{self.types_found:,}/{self.vocab_types:,} word types ({types:.1%}) and "
                f"{self.tokens_found:,}/{self.tokens_total:,} training tokens ({tokens:.1%})")
        if self.malformed_lines:
            text += f"; {self.malformed_lines:,} malformed lines skipped"
        return text + (" [cached]" if self.from_cache else "")


def _open_lines(path):
    """(iterator of raw lines, total size, function giving the bytes read so far)."""
    if path.endswith(".zip"):
        archive = zipfile.ZipFile(path)
        members = [m for m in archive.infolist() if m.filename.endswith(".txt")]
        if len(members) != 1:
            raise DataError(f"{path} must hold exactly one .txt file of vectors.")
        stream = archive.open(members[0])
        return stream, members[0].file_size, stream.tell
    raw = open(path, "rb")
    size = os.fstat(raw.fileno()).st_size
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw), size, raw.tell
    return raw, size, raw.tell


def _progress(total, enabled):
    from tqdm import tqdm  # noqa: PLC0415  (only when reading a vector file)

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, mininterval=1.0,
                desc="reading word vectors", disable=not enabled)


def cache_key(path, vocabulary, *settings):
    """A short hash of the vector file (path, size, time), the vocabulary and `settings`."""
    stat = os.stat(path)
    text = "|".join(map(str, [os.path.abspath(path), stat.st_size, int(stat.st_mtime), *settings]))
    return hashlib.sha256(f"{text}|{vocabulary.fingerprint()}".encode()).hexdigest()[:20]


class _VectorLines:
    """One pass over a GloVe-format file: (word, the line's fields) per well-formed line.

    `dim` is the vector width (from the first line); `malformed` counts lines with too few
    fields. Words are lower-cased when `lowercase` (a lower-cased vocabulary)."""

    def __init__(self, path, lowercase, progress):
        if not os.path.isfile(path):
            raise DataError(f"embeddings file {path} does not exist (use --embeddings=random "
                            "to train without pre-trained vectors).")
        self.path, self.lowercase, self.progress = path, lowercase, progress
        self.dim, self.malformed = None, 0

    def __iter__(self):
        stream, total, position = _open_lines(self.path)
        with stream, _progress(total, self.progress) as bar:
            for number, raw in enumerate(stream, start=1):
                if number % 20_000 == 0:
                    bar.update(position() - bar.n)
                parts = raw.rstrip(b"\r\n").decode("utf-8", errors="replace").split(" ")
                if self.dim is None:
                    self.dim = len(parts) - 1
                    if self.dim < 1:
                        raise DataError(f"{self.path}:1: not a word-vector line.")
                if len(parts) <= self.dim:
                    self.malformed += 1
                    continue
                word = " ".join(parts[:-self.dim])  # 840B words may hold spaces
                yield (word.lower() if self.lowercase else word), parts
            bar.update(position() - bar.n)
        if self.dim is None:
            raise DataError(f"embeddings file {self.path} is empty.")


def _read_vectors(lines, vocabulary):
    """{id: vector} for the vocabulary words the file has, a cased word missing in its case
    taking its lower-cased entry."""
    index = vocabulary.word_ids()
    lower = {}  # lower-cased word -> ids of cased words that may fall back to it
    if not vocabulary.lowercase:
        for word, i in index.items():
            if word.lower() != word:
                lower.setdefault(word.lower(), []).append(i)
    vectors, fallback = {}, {}
    for word, parts in lines:
        targets = []
        if word in index and index[word] not in vectors:
            targets.append((vectors, index[word]))
        for i in lower.get(word, ()):
            if i not in fallback:
                targets.append((fallback, i))
        if targets:
            try:
                vector = np.asarray(parts[-lines.dim:], dtype=np.float32)
            except ValueError:
                lines.malformed += 1
                continue
            for table, i in targets:
                table[i] = vector
    for i, vector in fallback.items():
        vectors.setdefault(i, vector)
    return vectors


def _matrix(vectors, vocabulary, dim, oov_init, seed, scale=0.05):
    """[V, D]: the vectors, seeded U(-scale, scale) or zeros where there is none, row 0 zero."""
    rng = np.random.default_rng(seed)
    matrix = (rng.uniform(-scale, scale, size=(vocabulary.size, dim)).astype(np.float32)
              if oov_init == "random" else np.zeros((vocabulary.size, dim), np.float32))
    for i, vector in vectors.items():
        matrix[i] = vector
    matrix[PAD_ID] = 0.0
    return matrix


def _cached(cache_path):
    with np.load(cache_path) as cached:
        report = EmbeddingReport(**json.loads(str(cached["report"])))
        report.cache_path, report.from_cache = cache_path, True
        return cached["matrix"], report


def _save(cache_path, matrix, report):
    os.makedirs(os.path.dirname(cache_path), exist_ok=True)
    # One temporary name per process: runs started together (a study on Ray) share the cache.
    temporary = f"{cache_path}.{os.getpid()}.partial.npz"
    np.savez(temporary, matrix=matrix, report=json.dumps(dataclasses.asdict(report)))
    os.replace(temporary, cache_path)


def load_vectors(path, vocabulary, cache_dir=None, oov_init="random", seed=0, progress=True,
                 oov_scale=0.05):
    """The embedding matrix of `vocabulary` from a GloVe-format file (.txt, .gz or .zip).

    Args:
        path: vector file, one `word v1 ... vD` per line (840B words may hold spaces).
        vocabulary: `dsan_tf.data.Vocabulary`.
        cache_dir: where to cache the matrix; None disables the cache.
        oov_init: "random" or "zeros", for words without a vector.
        oov_scale: random vectors are U(-oov_scale, oov_scale).
        seed: seed of the random rows.
        progress: show a progress bar (rate, ETA) while reading.

    Returns:
        (float32 array [V, D], `EmbeddingReport`).
    """
    lines = _VectorLines(path, vocabulary.lowercase, progress)
    if oov_init not in OOV_INITS:
        raise DataError(f"oov_init must be one of {OOV_INITS}, got {oov_init!r}.")
    cache_path = ""
    if cache_dir:
        # The scale joins the key only when it is not the default, so caches made before
        # it was a setting stay valid.
        settings = (oov_init, seed) + ((oov_scale,) if oov_scale != 0.05 else ())
        key = cache_key(path, vocabulary, *settings)
        cache_path = os.path.join(cache_dir, f"vectors-{key}.npz")
        if os.path.isfile(cache_path):
            return _cached(cache_path)
    vectors = _read_vectors(lines, vocabulary)
    matrix = _matrix(vectors, vocabulary, lines.dim, oov_init, seed, oov_scale)
    counts = np.asarray(vocabulary.counts, dtype=np.int64)
    found = np.zeros(len(vocabulary.words), bool)
    found[[i - 2 for i in vectors]] = True
    report = EmbeddingReport(
        source=path, dim=lines.dim, vocab_types=len(vocabulary.words),
        types_found=int(found.sum()), tokens_total=int(counts.sum()),
        tokens_found=int(counts[found].sum()), malformed_lines=lines.malformed,
        cache_path=cache_path)
    if cache_path:
        _save(cache_path, matrix, report)
    return matrix, report


def extend_vocabulary(path, vocabulary, extra_words=(), top_words=0, cache_dir=None,
                      progress=True):
    """`vocabulary` plus the words the vector file can give a vector.

    With frozen vectors, a word outside the training data is as well represented as any
    training word whenever the file has it: mapping it to the one unknown-word vector would
    throw that away. The new words come after the training words (whose ids do not move):
    first those of `extra_words` (e.g. the dev and test words) that the file has, exactly or,
    for a cased vocabulary, lower-cased, sorted; then the file's first `top_words` words
    (GloVe files are ordered by frequency), so that an exported model covers unseen text.

    Args:
        path: vector file, as for `load_vectors`.
        vocabulary: the training `Vocabulary`.
        extra_words: iterable of words (same casing rule as `vocabulary`).
        top_words: int, how many of the file's first words to add (0: none).
        cache_dir: where to keep the result (keyed like `load_vectors`); None: no cache.
        progress: show a progress bar while reading.

    Returns:
        (`Vocabulary`, {"from_data": int, "from_vectors": int}: words added by each rule).
    """
    lines = _VectorLines(path, vocabulary.lowercase, progress)  # a missing file: DataError
    known = set(vocabulary.words)
    extra = sorted(set(extra_words) - known)
    cache_path = (os.path.join(cache_dir, "vocabulary-"
                               f"{cache_key(path, vocabulary, 'extend', top_words, *extra)}.json")
                  if cache_dir else "")
    if cache_path and os.path.isfile(cache_path):
        with open(cache_path, encoding="utf-8") as stream:
            cached = json.load(stream)
        return vocabulary.extended(cached["words"]), cached["added"]
    from_data, from_vectors = _words_with_vectors(lines, vocabulary, known, extra, top_words)
    added = {"from_data": len(from_data), "from_vectors": len(from_vectors)}
    if cache_path:
        os.makedirs(cache_dir, exist_ok=True)
        # Runs may share the cache: each writes its own temporary file and renames it.
        atomic.write_text(cache_path, json.dumps({"words": from_data + from_vectors,
                                                  "added": added}))
    return vocabulary.extended(from_data + from_vectors), added


def _words_with_vectors(lines, vocabulary, known, extra, top_words):
    """(the words of `extra` the file has, exactly or lower-cased for a cased vocabulary;
    the file's first `top_words` words that are neither `known` nor among the former)."""
    wanted = set(extra)
    if not vocabulary.lowercase:
        wanted |= {word.lower() for word in extra}
    present, first = set(), {}  # a dict keeps the file's order
    for word, _ in lines:
        if word in wanted:
            present.add(word)
        if len(first) < top_words and word not in known:
            first.setdefault(word)
    from_data = [w for w in extra if w in present or w.lower() in present]
    taken = known | set(from_data)
    return from_data, [w for w in first if w not in taken]


def download_glove(name="glove.840B.300d", directory=".", timeout=30):
    """Downloads a GloVe archive into `directory` and returns its path.

    Raises:
        DataError: offline or unknown name, with what to do instead.
    """
    if name not in GLOVE_URLS:
        raise DataError(f"unknown GloVe file {name!r}; known: {', '.join(GLOVE_URLS)}.")
    url = GLOVE_URLS[name]
    target = os.path.join(directory, os.path.basename(url))
    if os.path.isfile(target):
        return target
    os.makedirs(directory, exist_ok=True)

    def save(partial):
        with urllib.request.urlopen(url, timeout=timeout) as response, \
                open(partial, "wb") as out:
            size = int(response.headers.get("Content-Length") or 0) or None
            with _progress(size, True) as bar:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    bar.update(len(chunk))

    try:
        atomic.write_with(target, save)
    except (urllib.error.URLError, OSError) as error:
        raise DataError(f"could not download {url} ({getattr(error, 'reason', error)}); "
                        "without internet, fetch it on another machine and pass "
                        f"--embeddings=/path/{os.path.basename(url)}.") from None
    return target
