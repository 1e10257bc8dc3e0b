"""Batches: every pair once per epoch, seeded order, little padding, counted truncation."""

import collections

import numpy as np
import pytest

from dsan_tf.data import (
    DEFAULT_BUCKETS, Example, NLIPreprocessor, Vocabulary, make_dataset, padding_fraction)
from dsan_tf.data.synthetic import word_order_pairs


def random_examples(count=300, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)]
    make = lambda n: " ".join(rng.choice(words, size=n))  # noqa: E731
    return [Example(make(rng.integers(3, 40)), make(rng.integers(2, 12)), int(i % 3))
            for i in range(count)]


@pytest.fixture(scope="module")
def pairs():
    examples = random_examples()
    vocab = Vocabulary.build([e.premise for e in examples] + [e.hypothesis for e in examples])
    return examples, vocab, NLIPreprocessor(vocab).encode(examples)


def collect(dataset):
    """Every pair of an epoch as (premise ids, hypothesis ids, label) without padding."""
    seen = []
    for inputs, labels in dataset:
        for p, h, y in zip(inputs["premise"].numpy(), inputs["hypothesis"].numpy(),
                           labels.numpy()):
            seen.append((tuple(p[p != 0]), tuple(h[h != 0]), int(y)))
    return seen


def test_batches_hold_every_pair_exactly_once(pairs):
    examples, vocab, encoded = pairs
    dataset = make_dataset(encoded, batch_size=16, shuffle=True, seed=3)
    for inputs, labels in dataset.take(1):
        assert set(inputs) == {"premise", "hypothesis"}
        assert inputs["premise"].dtype == "int32" and labels.dtype == "int32"
        assert inputs["premise"].shape[0] == labels.shape[0] <= 16
    expected = [(tuple(NLIPreprocessor(vocab).token_ids([e.premise]).to_list()[0]),
                 tuple(NLIPreprocessor(vocab).token_ids([e.hypothesis]).to_list()[0]), e.label) for e in examples]
    assert collections.Counter(collect(dataset)) == collections.Counter(expected)


def test_seeded_order_is_reproducible_and_reshuffled_each_epoch(pairs):
    _, _, encoded = pairs
    first = collect(make_dataset(encoded, batch_size=16, shuffle=True, seed=5))
    assert first == collect(make_dataset(encoded, batch_size=16, shuffle=True, seed=5))
    assert first != collect(make_dataset(encoded, batch_size=16, shuffle=True, seed=6))
    dataset = make_dataset(encoded, batch_size=16, shuffle=True, seed=5)
    assert collect(dataset) != collect(dataset)


def test_bucketing_keeps_padding_small(pairs):
    _, _, encoded = pairs
    plain = padding_fraction(make_dataset(encoded, batch_size=16, shuffle=True, seed=1,
                                          buckets=None))
    bucketed = padding_fraction(make_dataset(encoded, batch_size=16, shuffle=True, seed=1))
    assert bucketed < plain / 2, (bucketed, plain)


def test_epoch_length_is_known_in_advance(pairs):
    _, _, encoded = pairs
    dataset = make_dataset(encoded, batch_size=16, shuffle=True, seed=2)
    for _ in range(2):  # a reshuffled epoch has the same number of batches
        assert sum(1 for _ in dataset) == int(dataset.cardinality())


def test_long_sentences_are_truncated_and_counted():
    examples = [Example(" ".join(["word"] * 5000), "short one", 0),
                Example("fine", "also fine", 1)]
    vocab = Vocabulary.build(["word short one fine also"])
    encoded = NLIPreprocessor(vocab, max_length=64).encode(examples)
    assert encoded.report.truncated_premises == 1 and encoded.report.truncated_hypotheses == 0
    assert encoded.report.longest == 5000
    assert "truncated to max_length=64: 1 premises" in encoded.report.summary()
    assert max(len(r) for r in encoded.premise.to_list()) == 64
    untouched = NLIPreprocessor(vocab, max_length=None).encode(examples)
    assert max(len(r) for r in untouched.premise.to_list()) == 5000


def test_word_order_task_round_trip():
    examples = word_order_pairs()[:30]
    vocab = Vocabulary.build([e.premise for e in examples] + [e.hypothesis for e in examples])
    assert len(collect(make_dataset(NLIPreprocessor(vocab).encode(examples), batch_size=8))) == 30


def test_training_traces_each_step_once_whatever_the_batch_shapes(pairs):
    """Length-bucketed batches have many shapes; the train and dev steps must still be
    traced once for the whole run, or the first epoch pays for a retracing storm."""
    import keras

    from dsan_tf import DSANConfig, NLITask, build_model

    _, vocab, encoded = pairs
    dataset = make_dataset(encoded, batch_size=16, shuffle=True, seed=3)
    shapes = {(int(x["premise"].shape[1]), int(x["hypothesis"].shape[1])) for x, _ in dataset}
    assert len(shapes) >= 5
    model = NLITask().compile(build_model("dsan", DSANConfig(
        vocab_size=vocab.size, embedding_dim=8, num_heads=2, ffn_dim=8, classifier_units=8)))
    traces = collections.Counter()
    for kind in ("train", "test"):
        step = getattr(model, f"{kind}_step")

        def counted(batch, step=step, kind=kind):
            traces[kind] += 1  # Python runs only while TensorFlow traces the step
            return step(batch)
        setattr(model, f"{kind}_step", counted)
    model.fit(dataset, validation_data=dataset, epochs=2, verbose=0, shuffle=False)
    assert traces == {"train": 1, "test": 1}
    assert isinstance(model.optimizer, keras.optimizers.Adam)


def test_training_batchings(pairs):
    """docs/FIDELITY.md#training-batches: by default batches are sorted within chunks, and
    like plain batches all full but the last; premise buckets group pairs by premise length
    alone (in SNLI a hypothesis's length predicts its label; a premise's does not), at most
    one partial batch per bucket; every pair comes once; static shapes (TPUs) always pad to
    bucket boundaries."""
    from dsan_tf import DataConfig, ExperimentConfig, NLITask

    examples, _, encoded = pairs
    assert DataConfig().batching == "sorted_chunks"
    task = NLITask(ExperimentConfig(data=DataConfig(batch_size=16, seed=4,
                                                    batching="premise_buckets")))
    batches = list(task.build_inputs(encoded, training=True))
    assert sum(int(labels.shape[0]) < 16 for _, labels in batches) <= len(DEFAULT_BUCKETS) + 1
    for inputs, _ in batches:
        lengths = np.count_nonzero(inputs["premise"].numpy(), axis=1)
        assert len(set(np.searchsorted(DEFAULT_BUCKETS, lengths, side="right"))) == 1
    assert sorted(collect(task.build_inputs(encoded, training=True))) == sorted(
        collect(make_dataset(encoded, batch_size=16)))
    full = [16] * (len(examples) // 16) + [len(examples) % 16]
    for batching in ("plain", "sorted_chunks"):
        plain = NLITask(ExperimentConfig(data=DataConfig(batch_size=16, batching=batching)))
        batches = list(plain.build_inputs(encoded, training=True))
        assert sorted((int(labels.shape[0]) for _, labels in batches), reverse=True) == full


def test_sorted_chunk_batches_are_full_short_and_unsorted_by_hypothesis(pairs):
    """`--batching=sorted_chunks` (docs/FIDELITY.md#training-batches): every pair once per
    epoch, every batch full but the last, far less padding than plain batches, a seeded
    order that changes between epochs, and the hypotheses within a premise length left in
    shuffled order (a hypothesis's length predicts its SNLI label)."""
    _, _, encoded = pairs
    size = len(encoded.labels)

    def epochs(dataset, count=2):
        iterator = iter(dataset.repeat(count))
        per_epoch = len(dataset)
        return [[next(iterator) for _ in range(per_epoch)] for _ in range(count)]

    sorted_batches = make_dataset(encoded, batch_size=16, shuffle=True, seed=5, sort_chunks=4)
    first, second = epochs(sorted_batches)
    assert len(first) == -(-size // 16)
    assert [int(labels.shape[0]) for _, labels in first].count(16) == size // 16
    assert sorted(collect(first)) == sorted(collect(make_dataset(encoded, batch_size=16)))
    assert collect(first) != collect(second)
    assert collect(first) == collect(epochs(make_dataset(
        encoded, batch_size=16, shuffle=True, seed=5, sort_chunks=4), 1)[0])
    plain = make_dataset(encoded, batch_size=16, shuffle=True, seed=5, buckets=None)
    premise_padding = lambda batches: padding_fraction(  # noqa: E731
        [({"premise": inputs["premise"]}, labels) for inputs, labels in batches])
    assert premise_padding(first) < 0.5 * premise_padding(plain)
    # Neighbours of equal premise length are not ordered by hypothesis length.
    rising = []
    for inputs, _ in first:
        premise, hypothesis = (np.count_nonzero(inputs[name].numpy(), axis=1)
                               for name in ("premise", "hypothesis"))
        same = premise[1:] == premise[:-1]
        rising += list(np.diff(hypothesis)[same] >= 0)
    assert len(rising) > 50 and np.mean(rising) < 0.8
