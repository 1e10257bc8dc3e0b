"""An encoded setting in one small file: the configuration and run policy, each split's
token ids
(`IdPairs`), the word-vector matrix and the vocabulary, as a compressed `.npz`. It is
written where TensorFlow tokenizes (`dsan-encode-setting`) and read with
NumPy alone, so a machine without TensorFlow (the lent GPU machines) trains on exactly
the same ids (`dsan-train --setting`). The 25k study setting takes about
4 MB.
"""

import dataclasses
import json
import pathlib

import numpy as np

from dsan_tf.data.batching import IdPairs
from dsan_tf.data.vocabulary import Vocabulary

FORMAT = "dsan_tf.encoded_setting/1"
# The data settings that say how batches are drawn from the ids, or where files are
# looked for, not what the ids and vectors are: a run of the setting may change them.
BATCHING = ("batch_size", "shuffle", "batching", "deterministic", "tfds_data_dir",
            "embeddings_cache_dir")
_FIELDS = ("premise", "premise_lengths", "hypothesis", "hypothesis_lengths", "labels")


@dataclasses.dataclass
class EncodedSetting:
    """What a run trains on, encoded.

    Attributes:
        config: `dsan_tf.core.config.ExperimentConfig` (its `data` names where the
            ids came from).
        policy: `dsan_tf.core.config.RunPolicy` as given (its unset choices are decided
            where it trains).
        splits: {"train": IdPairs, "dev": IdPairs, ...}.
        word_vectors: float32 [V, D], or None (random vectors).
        words: the vocabulary's words in id order from id 2 (`Vocabulary.words`: ids 0
            and 1 are padding and the unknown word).
        found: what reading and encoding the text found, as numbers: a run's config.json
            "embeddings", "read" (pairs kept and dropped) and "tokens" (unknown words,
            truncation) per split. Default: counted from the ids (without truncation or
            reading counts, which the ids do not keep).
    """

    config: object
    policy: object
    splits: dict
    word_vectors: np.ndarray | None
    words: list
    found: dict = None

    def __post_init__(self):
        if self.found is None:
            self.found = {
                "embeddings": {"source": self.config.data.embeddings
                               if self.word_vectors is not None else "random"},
                "read": {}, "tokens": {name: pairs.report().counts()
                                       for name, pairs in self.splits.items()}}

    @property
    def vocabulary_size(self):
        """V: the words, padding and the unknown word."""
        return len(self.words) + Vocabulary.FIRST_WORD_ID

    def save(self, path):
        """Writes the `.npz` file (ids as uint16 where the vocabulary fits), creating its
        folder."""
        id_type = "uint16" if self.vocabulary_size <= 65536 else "int32"
        arrays = {"meta": np.frombuffer(json.dumps({
            "format": FORMAT, "config": self.config.to_dict(),
            "policy": self.policy.to_dict(), "words": list(self.words), "found": self.found,
            "splits": sorted(self.splits)}).encode(), "uint8")}
        for name, pairs in self.splits.items():
            for field in _FIELDS:
                values = getattr(pairs, field)
                arrays[f"{name}.{field}"] = (values.astype(id_type) if field in
                                             ("premise", "hypothesis") else values)
        if self.word_vectors is not None:
            arrays["word_vectors"] = np.asarray(self.word_vectors, "float32")
        pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as stream:
            np.savez_compressed(stream, **arrays)

    @classmethod
    def load(cls, path):
        """Reads a file `save` wrote; ValueError when it is not one."""
        from dsan_tf.core.config import ExperimentConfig, RunPolicy  # plain Python

        with np.load(path) as arrays:
            if "meta" not in arrays:
                raise ValueError(f"{path} is no encoded setting (no 'meta' entry).")
            meta = json.loads(arrays["meta"].tobytes().decode())
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path} is in format {meta.get('format')!r}, not {FORMAT}.")
            splits = {name: IdPairs(*(arrays[f"{name}.{field}"].astype("int32")
                                      for field in _FIELDS))
                      for name in meta["splits"]}
            vectors = arrays["word_vectors"] if "word_vectors" in arrays else None
        # Older files keep the policy's choices in their configuration's parts.
        policy = RunPolicy.from_record({**meta["config"], **meta}) or RunPolicy()
        setting = cls(ExperimentConfig.from_dict(meta["config"]), policy, splits, vectors,
                      meta["words"], meta.get("found"))
        setting.check(path)
        return setting

    def check(self, path="the setting"):
        """ValueError unless every id has a row (an embedding lookup past its table is
        not an error on every backend: JAX clamps it silently)."""
        size = self.vocabulary_size
        if self.word_vectors is not None and len(self.word_vectors) != size:
            raise ValueError(f"{path}: {len(self.word_vectors)} word vectors for {size} ids.")
        for name, pairs in self.splits.items():
            for side in ("premise", "hypothesis"):
                ids = getattr(pairs, side)
                if len(ids) and (ids.min() < 0 or ids.max() >= size):
                    raise ValueError(f"{path}: {name} {side} ids reach {ids.max()}, past "
                                     f"the {size} ids of its vocabulary.")

