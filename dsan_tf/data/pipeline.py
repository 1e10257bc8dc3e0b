"""Token ids -> padded, length-bucketed `tf.data` batches.

`NLIPreprocessor.encode` tokenizes and looks up all examples once, vectorised (no Python
work per example), into `EncodedPairs`; the dataset then shuffles (seeded), groups pairs of similar length so that little
padding is needed, pads each batch to its own longest sentence, and prefetches.

Shape legend: B batch, T1 premise tokens, T2 hypothesis tokens (each batch its own).
"""

import dataclasses

import numpy as np
from dsan_tf.common.frameworks import tf

# One definition, in the module that needs no TensorFlow.
from dsan_tf.data.batching import DEFAULT_BUCKETS, SORT_CHUNK_BATCHES, EncodeReport  # noqa: F401
from dsan_tf.data.vocabulary import PAD_ID

DEFAULT_MAX_LENGTH = 256


@dataclasses.dataclass
class EncodedPairs:
    """Token ids of sentence pairs: int32 RaggedTensors [N, None] and labels int32 [N]."""

    premise: tf.RaggedTensor
    hypothesis: tf.RaggedTensor
    labels: np.ndarray
    report: EncodeReport

    @classmethod
    def from_ids(cls, pairs, tokens, max_length):
        """From `IdPairs` (an encoded setting's) and the counts its encoding reported
        (`tokens`: `EncodeReport.counts()`): the pairs
        `NLIPreprocessor.encode` gave."""
        def ragged(side):
            return tf.RaggedTensor.from_row_lengths(getattr(pairs, side),
                                                    getattr(pairs, f"{side}_lengths"))
        counts = {key: value for key, value in tokens.items() if key != "oov_rate"}
        return cls(ragged("premise"), ragged("hypothesis"), np.asarray(pairs.labels, "int32"),
                   EncodeReport(**counts, max_length=max_length))


def make_dataset(pairs, batch_size=64, shuffle=False, seed=None, buckets=DEFAULT_BUCKETS,
                 deterministic=True, bucket_hypothesis=True, sort_chunks=0):
    """A dataset of `({"premise": int32 [B, T1], "hypothesis": int32 [B, T2]}, int32 [B])`.

    Pairs are grouped by the length bucket of the premise and, with `bucket_hypothesis`, of
    the hypothesis too (a hypothesis is usually much shorter than its premise, so one key
    for both would pad hypotheses heavily: 26% padding on SNLI dev against 7%). In SNLI a
    hypothesis's length predicts its label and a premise's does not (every premise comes
    with a hypothesis of each label), so grouping by the premise alone keeps batches
    label-balanced; training uses plain batches by default all the same
    (docs/FIDELITY.md#training-batches).

    Args:
        pairs: `EncodedPairs`.
        batch_size: int, B.
        shuffle: shuffle the pairs each epoch (seeded by `seed`).
        seed: int or None.
        buckets: increasing length boundaries; empty or None pads plain batches.
        bucket_hypothesis: group by the hypothesis's length bucket as well as the premise's.
        deterministic: fix the element order (with a seed, identical across runs).
        sort_chunks: instead of `buckets`, cut the (shuffled) pairs into chunks of this many
            batches and sort each chunk by premise length before batching, then shuffle
            the batches: every batch is full but the epoch's last, padding falls from 59%
            to 25% on SNLI, and batches stay label-balanced (a premise's length does not
            predict the label). 0: plain batches.
    """
    dataset = tf.data.Dataset.from_tensor_slices(
        ({"premise": pairs.premise, "hypothesis": pairs.hypothesis}, pairs.labels))
    if shuffle:
        dataset = dataset.shuffle(len(pairs.labels), seed=seed, reshuffle_each_iteration=True)
    # Rows of a ragged tensor arrive as ragged specs; an identity map makes them dense
    # vectors, which the padding batchers need.
    dataset = dataset.map(lambda inputs, label: (inputs, label),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    padding_values = ({"premise": PAD_ID, "hypothesis": PAD_ID}, 0)
    if sort_chunks:
        return _finish(_sorted_chunk_batches(dataset, len(pairs.labels), batch_size,
                                             sort_chunks, shuffle, seed),
                       deterministic)
    if not buckets:
        return _finish(dataset.padded_batch(
            batch_size, ({"premise": [None], "hypothesis": [None]}, []), padding_values),
            deterministic)
    return _finish(_bucketed_batches(dataset, pairs, batch_size, buckets, bucket_hypothesis,
                                     padding_values),
                   deterministic)


def _bucketed_batches(dataset, pairs, batch_size, buckets, bucket_hypothesis, padding_values):
    """Batches of pairs that share a (premise, hypothesis) length bucket (`make_dataset`),
    with their known number (progress bars with ETA, no "ran out of data" at epoch 1)."""
    cardinality = batch_count(pairs, batch_size, buckets, bucket_hypothesis)
    boundaries = tf.constant(list(buckets), tf.int64)

    def bucket(ids):
        index = tf.searchsorted(boundaries, tf.shape(ids, out_type=tf.int64),
                                side="right", out_type=tf.int64)
        return tf.reshape(index, [])

    def key(inputs, _):
        hypothesis = bucket(inputs["hypothesis"]) if bucket_hypothesis else len(buckets)
        return bucket(inputs["premise"]) * (len(buckets) + 1) + hypothesis

    def batch(_, window):
        return window.padded_batch(
            batch_size, ({"premise": [None], "hypothesis": [None]}, []), padding_values)

    dataset = dataset.group_by_window(key, batch, window_size=batch_size)
    return dataset.apply(tf.data.experimental.assert_cardinality(cardinality))


def _sorted_chunk_batches(dataset, size, batch_size, chunk_batches, shuffle, seed):
    """Batches of pairs of similar premise length, drawn from chunks of `chunk_batches`
    batches of (already shuffled) pairs, in shuffled order."""
    dataset = dataset.map(lambda inputs, label: (inputs, label, tf.size(inputs["premise"])))
    dataset = dataset.ragged_batch(batch_size * chunk_batches)

    def by_premise_length(inputs, labels, lengths):
        # Stable: pairs of equal premise length keep their shuffled order, so a batch's
        # hypotheses (whose length does predict the label) are not sorted too.
        order = tf.argsort(lengths, stable=True)
        return ({name: tf.gather(ids, order) for name, ids in inputs.items()},
                tf.gather(labels, order))

    dataset = dataset.map(by_premise_length).unbatch()
    dataset = dataset.map(lambda inputs, label: (inputs, label))  # ragged rows -> vectors
    dataset = dataset.padded_batch(
        batch_size, ({"premise": [None], "hypothesis": [None]}, []),
        ({"premise": PAD_ID, "hypothesis": PAD_ID}, 0))
    if shuffle:
        # Chunks are multiples of the batch size, so only the epoch's last batch is partial;
        # shuffling batches over two chunks hides the short-to-long order within each.
        dataset = dataset.shuffle(2 * chunk_batches, seed=None if seed is None else seed + 1,
                                  reshuffle_each_iteration=True)
    return dataset.apply(tf.data.experimental.assert_cardinality(-(-size // batch_size)))


def batch_count(pairs, batch_size, buckets=DEFAULT_BUCKETS, bucket_hypothesis=True):
    """Batches per epoch of `make_dataset`: each bucket yields ceil(n / B) batches whatever
    the shuffle order, so Keras can be told the epoch length in advance."""
    if buckets:
        index = lambda ids: np.searchsorted(buckets, ids.row_lengths().numpy(),  # noqa: E731
                                            side="right")
        keys = index(pairs.premise) * (len(buckets) + 1) + (
            index(pairs.hypothesis) if bucket_hypothesis else len(buckets))
        sizes = np.bincount(keys)
    else:
        sizes = np.array([len(pairs.labels)])
    return int((-(-sizes // batch_size)).sum())


def _finish(dataset, deterministic):
    options = tf.data.Options()
    options.deterministic = deterministic
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


def padding_fraction(dataset):
    """Share of padding among all token slots of a batched dataset (one pass over it)."""
    padded = real = 0
    for inputs, _ in dataset:
        for ids in inputs.values():
            padded += int(tf.size(ids))
            real += int(tf.math.count_nonzero(ids))
    return 1.0 - real / max(padded, 1)
