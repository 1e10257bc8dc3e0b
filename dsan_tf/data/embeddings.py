"""Pre-trained word vectors (GloVe text format) for a vocabulary, cached after the first read.

`glove.840B.300d.txt` is 5.6 GB: it is streamed once, only vocabulary words are kept, and the
resulting [V, D] matrix is cached as `.npz` under a key made of the vocabulary fingerprint
and the source file's path, size and modification time, so later runs load it in a second.

Words missing from the vectors (and the unknown-word row) are drawn from U(-0.05, 0.05) with a
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

from dsan_tf.data.sources import DataError
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


def cache_key(path, vocabulary, oov_init, seed):
    stat = os.stat(path)
    text = f"{os.path.abspath(path)}|{stat.st_size}|{int(stat.st_mtime)}|{oov_init}|{seed}"
    return hashlib.sha256(f"{text}|{vocabulary.fingerprint()}".encode()).hexdigest()[:20]


def load_vectors(path, vocabulary, cache_dir=None, oov_init="random", seed=0, progress=True):
    """The embedding matrix of `vocabulary` from a GloVe-format file (.txt, .gz or .zip).

    Args:
        path: vector file, one `word v1 ... vD` per line (840B words may hold spaces).
        vocabulary: `dsan_tf.data.Vocabulary`.
        cache_dir: where to cache the matrix; None disables the cache.
        oov_init: "random" or "zeros", for words without a vector.
        seed: seed of the random rows.
        progress: show a progress bar (rate, ETA) while reading.

    Returns:
        (float32 array [V, D], `EmbeddingReport`).
    """
    if not os.path.isfile(path):
        raise DataError(f"embeddings file {path} does not exist (use --embeddings=random to "
                        "train without pre-trained vectors).")
    if oov_init not in OOV_INITS:
        raise DataError(f"oov_init must be one of {OOV_INITS}, got {oov_init!r}.")
    cache_path = ""
    if cache_dir:
        cache_path = os.path.join(
            cache_dir, f"vectors-{cache_key(path, vocabulary, oov_init, seed)}.npz")
        if os.path.isfile(cache_path):
            with np.load(cache_path) as cached:
                report = EmbeddingReport(**json.loads(str(cached["report"])))
                report.cache_path, report.from_cache = cache_path, True
                return cached["matrix"], report

    index = {word: i + 2 for i, word in enumerate(vocabulary.words)}
    lower = {}  # lower-cased word -> ids of cased words that may fall back to it
    if not vocabulary.lowercase:
        for word, i in index.items():
            if word.lower() != word:
                lower.setdefault(word.lower(), []).append(i)
    vectors, fallback, dim, malformed = {}, {}, None, 0
    stream, total, position = _open_lines(path)
    with stream, _progress(total, progress) as bar:
        for number, raw in enumerate(stream, start=1):
            if number % 20_000 == 0:
                bar.update(position() - bar.n)
            parts = raw.rstrip(b"\r\n").decode("utf-8", errors="replace").split(" ")
            if dim is None:
                dim = len(parts) - 1
                if dim < 1:
                    raise DataError(f"{path}:1: not a word-vector line.")
            if len(parts) <= dim:
                malformed += 1
                continue
            word = " ".join(parts[:-dim])
            if vocabulary.lowercase:
                word = word.lower()
            targets = []
            if word in index and index[word] not in vectors:
                targets.append((vectors, index[word]))
            for i in lower.get(word, ()):
                if i not in fallback:
                    targets.append((fallback, i))
            if targets:
                try:
                    vector = np.asarray(parts[-dim:], dtype=np.float32)
                except ValueError:
                    malformed += 1
                    continue
                for table, i in targets:
                    table[i] = vector
        bar.update(position() - bar.n)
    if dim is None:
        raise DataError(f"embeddings file {path} is empty.")
    for i, vector in fallback.items():
        vectors.setdefault(i, vector)

    rng = np.random.default_rng(seed)
    matrix = (rng.uniform(-0.05, 0.05, size=(vocabulary.size, dim)).astype(np.float32)
              if oov_init == "random" else np.zeros((vocabulary.size, dim), np.float32))
    for i, vector in vectors.items():
        matrix[i] = vector
    matrix[PAD_ID] = 0.0
    counts = np.asarray(vocabulary.counts, dtype=np.int64)
    found = np.zeros(len(vocabulary.words), bool)
    found[[i - 2 for i in vectors]] = True
    report = EmbeddingReport(
        source=path, dim=dim, vocab_types=len(vocabulary.words), types_found=int(found.sum()),
        tokens_total=int(counts.sum()), tokens_found=int(counts[found].sum()),
        malformed_lines=malformed, cache_path=cache_path)
    if cache_path:
        os.makedirs(cache_dir, exist_ok=True)
        temporary = cache_path + ".partial.npz"
        np.savez(temporary, matrix=matrix, report=json.dumps(dataclasses.asdict(report)))
        os.replace(temporary, cache_path)
    return matrix, report


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
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, \
                open(target + ".partial", "wb") as out:
            size = int(response.headers.get("Content-Length") or 0) or None
            with _progress(size, True) as bar:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError) as error:
        raise DataError(f"could not download {url} ({getattr(error, 'reason', error)}); "
                        "without internet, fetch it on another machine and pass "
                        f"--embeddings=/path/{os.path.basename(url)}.") from None
    os.replace(target + ".partial", target)
    return target
