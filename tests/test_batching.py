"""NumPy batches of bounded shapes (dsan_tf.data.batching), on any Keras backend: every pair
once per epoch, padding to the grid only, rows that fill a batch weighted 0 and without
effect on the loss, the seeded order, the grid's optimality, the encoded setting's file."""

import collections
import dataclasses
import itertools
import warnings

import keras
import numpy as np
import pytest

from dsan_tf.core.config import (DataConfig, ExperimentConfig, RunPolicy, TrainingConfig,
                                 model_config)
from dsan_tf.data import costs
from dsan_tf.data.batching import (IdPairs, NLIBatches, Shapes, batch_order, length_grid,
                                   pad_to)
from dsan_tf.core.task import NLITask
from dsan_tf.training.setting import EncodedSetting


def varied_pairs(count=700, seed=0, vocab=50):
    """Pairs of SNLI-like varied lengths: premises 3-60 tokens (most near 13), hypotheses
    1-25 (most near 7)."""
    rng = np.random.default_rng(seed)
    premise = np.clip(rng.gamma(4.0, 3.4, count).astype(int), 3, 60)
    hypothesis = np.clip(rng.gamma(3.0, 2.4, count).astype(int), 1, 25)
    return IdPairs.from_lists([rng.integers(2, vocab, n) for n in premise],
                              [rng.integers(2, vocab, n) for n in hypothesis],
                              rng.integers(0, 3, count))


def rows(batch):
    """The real pairs of a batch as (premise ids, hypothesis ids, label), padding removed."""
    inputs, labels, weights = batch
    return [(tuple(p[p != 0]), tuple(h[h != 0]), int(y))
            for p, h, y, w in zip(inputs["premise"], inputs["hypothesis"], labels, weights)
            if w > 0]


def all_pairs(pairs):
    return collections.Counter(
        (tuple(pairs.padded("premise", [i], 99)[0][:pairs.premise_lengths[i]]),
         tuple(pairs.padded("hypothesis", [i], 99)[0][:pairs.hypothesis_lengths[i]]),
         int(pairs.labels[i])) for i in range(len(pairs)))


@pytest.mark.parametrize("order", ["plain", "sorted_chunks", "premise_buckets",
                                   "length_buckets", "in_order"])
def test_an_epoch_holds_every_pair_once_in_few_full_shapes(order):
    pairs = varied_pairs()
    batches = NLIBatches(pairs, batch_size=32, order=order, seed=3)
    seen, shapes = [], set()
    for index in range(len(batches)):
        inputs, labels, weights = batches[index]
        shapes.add((len(labels), inputs["premise"].shape[1], inputs["hypothesis"].shape[1]))
        assert inputs["premise"].dtype == "int32" and labels.dtype == "int32"
        assert weights.dtype == "float32" and set(np.unique(weights)) <= {0.0, 1.0}
        # Fill rows come last and repeat a real pair of the batch.
        real = int(weights.sum())
        assert np.all(weights[:real] == 1) and np.all(weights[real:] == 0)
        if real < len(weights):
            assert np.array_equal(inputs["premise"][real], inputs["premise"][0])
        seen += rows((inputs, labels, weights))
    assert collections.Counter(seen) == all_pairs(pairs)
    grids = batches.shapes
    assert {b for b, _, _ in shapes} == {32}
    assert {t1 for _, t1, _ in shapes} <= set(grids.premise_grid)
    assert {t2 for _, _, t2 in shapes} <= set(grids.hypothesis_grid)
    assert len(shapes) <= 12
    assert grids.premise_grid[-1] == pairs.premise_lengths.max()


def test_padding_is_only_what_the_grid_needs():
    """Each batch is as wide as the smallest grid length that holds its longest sentence,
    and the fitted grid pads less than one length for everything."""
    pairs = varied_pairs()
    batches = NLIBatches(pairs, batch_size=32, order="sorted_chunks", seed=1)
    for indices in batches.plan(0):
        inputs, _, _ = batches.batch(indices)
        longest = pairs.premise_lengths[indices].max()
        assert inputs["premise"].shape[1] == pad_to(batches.shapes.premise_grid, longest)
    one = NLIBatches(pairs, 32, "sorted_chunks", Shapes.fit(pairs, 32, "sorted_chunks", 1,
                                                            1, 1), seed=1)
    free = NLIBatches(pairs, 32, "sorted_chunks", Shapes(), seed=1)
    padding, shapes = batches.describe()
    assert free.describe()[0] < padding < one.describe()[0] - 0.1
    assert len(shapes) <= 12 < len(free.describe()[1])


def test_the_order_is_seeded_per_pass_and_each_epoch_draws_the_next():
    pairs = varied_pairs()
    first = NLIBatches(pairs, 32, "sorted_chunks", seed=5)
    again = NLIBatches(pairs, 32, "sorted_chunks", seed=5)
    other = NLIBatches(pairs, 32, "sorted_chunks", seed=6)
    epoch = lambda b: [rows(b[i]) for i in range(len(b))]  # noqa: E731
    one = epoch(first)
    assert one == epoch(again) and one != epoch(other)
    first.on_epoch_end()
    two = epoch(first)
    assert two != one and sorted(itertools.chain(*two)) == sorted(itertools.chain(*one))
    # The same pass k from anywhere: a resumed run can continue its order.
    again.start_at_pass(1)
    assert epoch(again) == two


def test_an_epoch_of_n_steps_runs_on_through_the_passes():
    pairs = varied_pairs(100)
    batches = NLIBatches(pairs, 32, "plain", seed=0, steps=10)  # a pass is 4 batches
    assert len(batches) == 10
    seen = [rows(batches[i]) for i in range(10)]
    assert collections.Counter(itertools.chain(*seen[:4])) == all_pairs(pairs)
    assert collections.Counter(itertools.chain(*seen[4:8])) == all_pairs(pairs)


def brute_force_grid(maxima, count, longest):
    values = sorted(set(maxima) | {longest})
    best = None
    for size in range(1, count + 1):
        for chosen in itertools.combinations(values[:-1], size - 1):
            grid = (*chosen, longest)
            cost = sum(pad_to(grid, m) - m for m in maxima)
            if best is None or cost < best[0]:
                best = (cost, grid)
    return best[0]


@pytest.mark.parametrize("seed", range(5))
def test_the_grid_pads_least_among_all_grids_of_its_size(seed):
    rng = np.random.default_rng(seed)
    maxima = list(rng.integers(3, 30, 40))
    for count in (1, 2, 3, 4):
        grid = length_grid(maxima, count, 30)
        assert len(grid) <= count and grid[-1] == 30
        assert sum(pad_to(grid, m) - m for m in maxima) == brute_force_grid(maxima, count, 30)


def test_fill_rows_change_neither_loss_nor_accuracy():
    """A batch filled to its fixed size with weight-0 rows gives the loss and accuracy of
    its real rows alone (the loss divides by the weights' sum)."""
    task = NLITask(ExperimentConfig(model_config=model_config(
        "dsan", embedding_dim=8, num_heads=2, ffn_dim=16, classifier_units=8)))
    model = task.compile(task.build_model(60))
    pairs = varied_pairs(20)
    batches = NLIBatches(pairs, 32, "in_order", shuffle=False)
    inputs, labels, weights = batches[0]
    assert weights.sum() == 20
    filled = model.evaluate(inputs, labels, sample_weight=weights, batch_size=32, verbose=0,
                            return_dict=True)
    real = {side: ids[:20, :max(pairs.premise_lengths.max(), 1)] if side == "premise"
            else ids[:20] for side, ids in inputs.items()}
    alone = model.evaluate(real, labels[:20], batch_size=32, verbose=0, return_dict=True)
    assert filled["loss"] == pytest.approx(alone["loss"], rel=1e-5)
    assert filled["accuracy"] == pytest.approx(alone["accuracy"])


def test_the_task_batches_in_numpy_where_the_step_is_compiled():
    pairs = varied_pairs(200)
    compiled = NLITask(ExperimentConfig(), RunPolicy(jit_compile=True))
    assert isinstance(compiled.build_inputs(pairs, training=True), NLIBatches)
    evaluation = compiled.build_inputs(pairs)
    assert isinstance(evaluation, NLIBatches) and evaluation.order == "length_buckets"
    free = NLITask(ExperimentConfig(), RunPolicy(jit_compile=True, bounded_shapes=False))
    assert not free.build_inputs(pairs, training=True).shapes.bounded
    capped = NLITask(ExperimentConfig(training=TrainingConfig(steps_per_epoch=3)),
                     RunPolicy(jit_compile=True))
    assert len(capped.build_inputs(pairs, training=True)) == 3


def test_one_planner_names_the_strategy_of_every_run():
    """`NLITask.plan`: one strategy a run, decided from its policy (resolved) and family,
    and one planner behind it: each strategy's batches are what it names."""
    from dsan_tf.data import planning

    def plan(model="dsan", **policy):
        return NLITask(ExperimentConfig(model=model), RunPolicy(**policy)).plan

    compiled = {"jit_compile": True, "sentence_programs": False}
    assert plan(jit_compile=False).strategy == "longest"  # an uncompiled step
    assert plan(**compiled).strategy == "priced"
    assert plan(shape_costs="padding", **compiled).strategy == "grid"
    # Per-length programs (JAX's: resolved off elsewhere) share a grid in a sentence
    # encoder, not in a family that reads the pair together.
    assert plan("afdmn", jit_compile=True, sentence_programs=True).strategy == "priced"
    assert planning.strategy(True, shared_lengths=True) == "shared"
    pairs = varied_pairs(300)
    grid = plan(shape_costs="padding", **compiled).batches(pairs, training=True)
    assert grid.shapes == Shapes.fit(pairs, 64, "sorted_chunks")
    longest = plan(jit_compile=False).batches(pairs, training=True)  # NumPy, unbounded
    assert not longest.shapes.bounded
    shared = dataclasses.replace(plan(**compiled), strategy="shared", log=print)
    shapes = shared.batches(pairs, training=True).shapes
    assert shapes.premise_grid == shapes.hypothesis_grid
    with pytest.raises(ValueError, match="strategy must be one of longest, grid"):
        planning.BatchPlan("padded", 64)


def test_an_encoded_setting_round_trips_through_its_file(tmp_path):
    config = ExperimentConfig(data=DataConfig(train_data="a.jsonl", dev_data="b.jsonl",
                                              seed=4), model_config=model_config(
        "dsan", embedding_dim=8, num_heads=2))
    words = [f"w{i}" for i in range(48)]
    vectors = np.random.default_rng(0).normal(size=(50, 8)).astype("float32")
    policy = RunPolicy(steps_per_execution=4)
    setting = EncodedSetting(config, policy,
                             {"train": varied_pairs(300), "dev": varied_pairs(50, 1)},
                             vectors, words)
    path = tmp_path / "setting.npz"
    setting.save(path)
    loaded = EncodedSetting.load(path)
    assert loaded.config == config and loaded.words == words and loaded.policy == policy
    assert loaded.vocabulary_size == 50 == len(vectors)
    assert np.array_equal(loaded.word_vectors, vectors)
    for name, pairs in setting.splits.items():
        for field in ("premise", "premise_lengths", "hypothesis", "hypothesis_lengths",
                      "labels"):
            assert np.array_equal(getattr(loaded.splits[name], field), getattr(pairs, field))
            assert getattr(loaded.splits[name], field).dtype == "int32"
    # The same batches from the file as from the arrays.
    a, b = NLIBatches(setting.splits["train"], 32), NLIBatches(loaded.splits["train"], 32)
    for i in range(len(a)):
        assert all(np.array_equal(x, y) for x, y in zip(
            [*a[i][0].values(), *a[i][1:]], [*b[i][0].values(), *b[i][1:]]))
    setting.splits["dev"].premise[0] = 50  # an id past the vocabulary
    setting.save(path)
    with pytest.raises(ValueError, match="dev premise ids reach 50, past the 50 ids"):
        EncodedSetting.load(path)
    (tmp_path / "other.npz").write_bytes(b"no numpy file")
    with pytest.raises(Exception):
        EncodedSetting.load(tmp_path / "other.npz")


def test_batch_order_refuses_an_unknown_order():
    with pytest.raises(ValueError, match="order must be one of"):
        batch_order(varied_pairs(10), 4, "random")


def test_keras_fits_the_batches_with_their_weights():
    """`fit` takes NLIBatches as they are (a PyDataset of triples), on any backend."""
    task = NLITask(ExperimentConfig(model_config=model_config(
        "dsan", embedding_dim=8, num_heads=2, ffn_dim=16, classifier_units=8)))
    model = task.compile(task.build_model(60))
    pairs = varied_pairs(100)
    one_shape = Shapes.fit(pairs, 32, "sorted_chunks", 0, 1, 1)  # one compilation on JAX
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(NLIBatches(pairs, 32, shapes=one_shape, steps=4), epochs=2,
                            verbose=0)
    # Keras' "shuffle=True ... will be ignored" is not printed for batches in their order.
    assert not [w for w in caught if "shuffle" in str(w.message)]
    assert len(history.history["loss"]) == 2
    assert all(np.isfinite(history.history["loss"]))
    assert keras.ops.convert_to_numpy(model.optimizer.iterations) == 8


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TensorFlow's PyDataset adapter fixes the spec of its first batches")
def test_batches_each_padded_to_its_own_longest_sentence_train_and_evaluate_on_tensorflow():
    """Unbounded `NLIBatches` (TensorFlow's default: each batch padded to its longest
    sentence) whose first two batches share their widths: Keras' adapter would fix those
    widths in its spec and stop at the first other one (an encoded setting's training did,
    in its dev pass). They train, evaluate and predict, each epoch on the next pass."""
    task = NLITask(ExperimentConfig(model_config=model_config(
        "dsan", embedding_dim=8, num_heads=2, ffn_dim=16, classifier_units=8)))
    model = task.compile(task.build_model(60))
    pairs = varied_pairs(200)
    train = NLIBatches(pairs, 16, "sorted_chunks", Shapes(), seed=0)
    dev = NLIBatches(pairs, 16, "in_order", Shapes(), shuffle=False)
    widths = [NLIBatches.shape_of(train[i])[1:] for i in range(len(train))]
    # A width the first two batches share (Keras' spec would fix it) and a later one lacks.
    assert any(widths[0][side] == widths[1][side] and
               any(w[side] != widths[0][side] for w in widths[2:]) for side in (0, 1))
    trained, batch = [], train.batch
    train.batch = lambda indices: trained.append(tuple(indices)) or batch(indices)
    history = model.fit(train, validation_data=dev, epochs=2, verbose=0)
    assert len(history.history["val_accuracy"]) == 2
    # Epoch 1 on pass 0, epoch 2 on pass 1 (after the one batch read for the spec).
    assert trained[1:] == [tuple(indices) for indices in train.plan(0) + train.plan(1)]
    assert int(model.optimizer.iterations) == 2 * len(train)
    assert np.isfinite(model.evaluate(dev, verbose=0)[0])
    assert model.predict(dev).shape == (200, 3)


def test_runs_of_k_batches_keep_one_shape_each_and_every_pair_once():
    """`run_length` K (K steps as one program on JAX): each run of K batches is one shape,
    a shape's last run starts with skip steps (weights all 0, a batch of that shape), each
    pair is still trained on once an epoch, and every epoch has the same length."""
    pairs, k = varied_pairs(900), 4
    shapes = Shapes.fit(pairs, 32, "sorted_chunks", 0, 2, 2)
    plain = NLIBatches(pairs, 32, shapes=shapes, seed=3)
    runs = NLIBatches(pairs, 32, shapes=shapes, seed=3, run_length=k)
    real = len(plain)
    assert len(runs) == k * ((real + shapes.count * (k - 1)) // k) and shapes.count == 4
    for epoch in range(3):
        batches = [runs[i] for i in range(len(runs))]
        assert len(batches) == len(runs)
        seen, skipped = [], 0
        for start in range(0, len(batches), k):
            run = batches[start:start + k]
            assert len({NLIBatches.shape_of(b) for b in run}) == 1
            skips = [not b[2].any() for b in run]
            assert not skips[-1] or all(skips)  # a run ends on a real step (or is all skips)
            assert skips == sorted(skips, reverse=True)  # skip steps come first
            skipped += sum(skips)
            seen += [row for b in run for row in rows(b)]
        assert collections.Counter(seen) == all_pairs(pairs)
        assert skipped == runs.skipped_steps == len(runs) - real
        # The same batches as without runs, in runs: each shape's batches keep their order.
        by_shape = collections.defaultdict(list)
        for b in [plain[i] for i in range(real)]:
            by_shape[NLIBatches.shape_of(b)].append(rows(b))
        for shape in by_shape:
            assert [rows(b) for b in batches if NLIBatches.shape_of(b) == shape
                    and b[2].any()] == by_shape[shape]
        runs.on_epoch_end(), plain.on_epoch_end()
    assert NLIBatches(pairs, 32, shapes=Shapes(), run_length=k).run_length == 1  # unbounded


@pytest.mark.parametrize("seed", range(3))
def test_one_grid_for_both_sides_pads_no_more_than_a_grid_each_with_fewer_lengths(seed):
    """`Shapes.fit_shared` (per-length programs compile each length once, whichever side
    it pads): the fewest lengths whose one grid pads no more than `fit`'s two grids; the
    padding it records is what an epoch of its batches holds."""
    pairs = varied_pairs(900, seed)
    shared = Shapes.fit_shared(pairs, 32, "sorted_chunks", seed)
    two = Shapes.fit(pairs, 32, "sorted_chunks", seed)
    chosen = shared.chosen
    assert shared.premise_grid == shared.hypothesis_grid
    assert chosen["grids"]["lengths"] == len(set(two.premise_grid) | set(two.hypothesis_grid))
    assert chosen["lengths"] == len(shared.premise_grid) < chosen["grids"]["lengths"]
    assert chosen["padding"] <= chosen["grids"]["padding"]
    # Padding as an epoch of batches in those shapes holds it (fill rows too); the choice
    # read one seeded pass, an epoch draws its own: within half a point on 900 pairs.
    for shapes, recorded in ((shared, chosen["padding"]), (two, chosen["grids"]["padding"])):
        epoch = NLIBatches(pairs, 32, "sorted_chunks", shapes, seed=seed)
        padded = real = 0
        for i in range(len(epoch)):
            inputs, _, weights = epoch[i]
            padded += sum(ids.size for ids in inputs.values())
            real += sum(int(np.count_nonzero(ids[weights > 0])) for ids in inputs.values())
        assert 1 - real / padded == pytest.approx(recorded, abs=0.01)
    # One length fewer pads more than the two grids.
    maxima = [costs.batch_maxima(getattr(pairs, f"{side}_lengths"), batch_order(
        pairs, 32, "sorted_chunks", np.random.default_rng(seed))) for side in
        ("premise", "hypothesis")]
    fewer = length_grid(np.concatenate(maxima), chosen["lengths"] - 1, shared.premise_grid[-1])
    tokens = lambda grids: sum(pad_to(g, m) for g, side in zip(grids, maxima)  # noqa: E731
                               for m in side)
    assert tokens((fewer, fewer)) > tokens((two.premise_grid, two.hypothesis_grid))
