"""Batch shapes chosen by what they cost on the device: the cost line fitted to
measurements, the choice against every alternative, the batches it gives, evaluation in
the training shapes, and the record of the choice."""

import itertools
import json
import pathlib

import numpy as np
import pytest

from dsan_tf.data import costs
from dsan_tf.data.batching import IdPairs, NLIBatches, Shapes, batch_order
from dsan_tf.core.config import ExperimentConfig, RunPolicy, TrainingConfig
from dsan_tf.core.task import NLITask
from tests.test_batching import all_pairs, rows, varied_pairs

RUNS = pathlib.Path(__file__).resolve().parents[1] / "records" / "runs"


@pytest.mark.parametrize("built_in, measured", [(costs.GPU, "shape_costs_h200.jsonl"),
                                                 (costs.CPU, "shape_costs_cpu.jsonl")])
def test_the_built_in_costs_are_the_line_through_the_committed_measurements(built_in,
                                                                             measured):
    fitted = costs.StepCosts.read(RUNS / measured)
    assert (fitted.compile_seconds, fitted.step_ms, fitted.step_ms_per_token,
            fitted.batch_size, fitted.embedding_dim) == (
        built_in.compile_seconds, built_in.step_ms, built_in.step_ms_per_token,
        built_in.batch_size, built_in.embedding_dim)


def test_the_fit_goes_through_the_measured_points():
    rows_ = [{"device": "jax: cpu", "fields": {"embedding_dim": 32}},
             *({"premise": p, "hypothesis": h, "batch_size": 32, "steps_per_execution": 1,
                "first_train_step_s": 3.0, "first_eval_step_s": 1.0,
                "train_ms_per_step": 5.0 + 0.5 * (p + h)} for p, h in ((8, 8), (16, 8),
                                                                      (32, 24)))]
    fitted = costs.StepCosts.fit(rows_)
    assert (fitted.compile_seconds, fitted.step_ms, fitted.step_ms_per_token,
            fitted.batch_size, fitted.embedding_dim) == pytest.approx((4.0, 5.0, 0.5, 32, 32))
    # Measured in one pass, a step read both sides at the longer one's length.
    one_pass = [rows_[0], *({**row, "one_pass": True, "train_ms_per_step": 5.0 + 0.5 * 2 * max(
        row["premise"], row["hypothesis"])} for row in rows_[1:])]
    assert costs.StepCosts.fit(one_pass).step_ms_per_token == pytest.approx(0.5)
    # Lines of `shape_costs --scan_only` alone (as the GPU session measures): their step
    # times and first calls.
    scans = [{"device": "jax: gpu"}, *({"premise": p, "hypothesis": h, "batch_size": 64,
                                        "one_pass": True, "scan32_first_call_s": 17.0 + p / 8,
                                        "scan32_ms_per_step": 0.5 + 0.02 * 2 * max(p, h)}
                                       for p, h in ((23, 24), (96, 48)))]
    line = costs.StepCosts.fit(scans)
    assert (line.compile_seconds, line.step_ms, line.step_ms_per_token) == pytest.approx(
        (17.0 + (23 + 96) / 16, 0.5, 0.02), abs=0.005)
    with pytest.raises(ValueError, match="nor scans"):
        costs.StepCosts.fit(scans[:1])
    # The script's A/Bs beside them (another layout, XLA's flags, a matmul precision,
    # bfloat16) do not move the line: it is of the model as training runs it.
    slower = {"scan32_ms_per_step": 9.0}
    ab = [{**scans[1], "packed_weights": True, **slower},
          {**scans[1], "xla_flags": "--xla_gpu_enable_triton_gemm=false", **slower},
          {**scans[1], "matmul_precision": "float32", **slower},
          {**scans[1], "dtype_policy": "mixed_bfloat16", **slower}]
    assert costs.StepCosts.fit([*scans, *ab]) == line
    assert not costs.as_run(ab[0]) and costs.as_run(scans[1])
    # The token part scales with rows and, on a CPU, with d_e squared.
    assert fitted.step_seconds(10, 6) == pytest.approx(0.013)
    assert fitted.step_seconds(10, 6, 64, 64) == pytest.approx((5 + 0.5 * 16 * 2 * 4) / 1e3)


def brute_force(distinct, counts, step_costs, passes, candidates, top, most):
    """The least predicted seconds over every set of candidate shapes with `top`."""
    return min(costs.run_seconds([*others, top], distinct, counts, step_costs, passes, 64,
                                 None)[0]
               for size in range(most) for others in itertools.combinations(candidates, size))


def test_the_chosen_shapes_cost_least_and_the_batches_are_what_was_predicted():
    pairs = varied_pairs(3000)
    gpu_like = costs.StepCosts(25.0, 2.0, 0.015, 64, None, "test")
    shapes = Shapes.choose(pairs, 64, "sorted_chunks", gpu_like, 20.0)
    chosen = shapes.chosen
    assert chosen["by"] == "cells" and 1 <= len(shapes.cells) <= 3
    assert chosen["cells"]["seconds"] < chosen["padding_grid"]["seconds"]
    # No set of up to 3 shapes from a finer ladder of lengths is predicted cheaper.
    batches = batch_order(pairs, 64, "sorted_chunks", np.random.default_rng(0))
    maxima = np.stack([costs.batch_maxima(pairs.premise_lengths, batches),
                       costs.batch_maxima(pairs.hypothesis_lengths, batches)], 1)
    distinct, counts = np.unique(maxima, axis=0, return_counts=True)
    top = tuple(int(v) for v in maxima.max(0))
    ladder = [(p, h) for p in range(10, top[0], 5) for h in range(6, top[1], 3)]
    best = brute_force(distinct, counts, gpu_like, 20.0, ladder, top, 3)
    assert chosen["cells"]["seconds"] <= best * 1.03
    # The batches: every pair once, each batch in a chosen shape that holds it, and the
    # padding the choice predicted.
    batched = NLIBatches(pairs, 64, "sorted_chunks", shapes)
    padding, used = batched.describe()
    assert {(t1, t2) for _, t1, t2 in used} <= set(shapes.cells)
    assert padding == pytest.approx(chosen["cells"]["padding"], abs=1e-4)
    seen = []
    for index in range(len(batched)):
        seen += rows(batched[index])
    assert sorted(seen) == sorted(all_pairs(pairs).elements())


def test_in_one_pass_a_shape_costs_its_longer_side_and_the_shapes_are_squares():
    """With one pass of the encoder (a GPU's default) both sides are padded to the longer:
    a shape (T1, T2) reads 2 max(T1, T2) tokens a row, so the choice is of squares, the
    largest holding the longest sentence of either side, and no set of up to 3 squares
    from a finer ladder is predicted cheaper."""
    gpu_like = costs.StepCosts(25.0, 2.0, 0.015, 64, None, "test")
    assert gpu_like.step_seconds(30, 10, one_pass=True) == pytest.approx(
        (2.0 + 0.015 * 60) / 1e3)
    assert gpu_like.step_seconds(30, 10) == pytest.approx((2.0 + 0.015 * 40) / 1e3)
    pairs = varied_pairs(3000)
    shapes = Shapes.choose(pairs, 64, "sorted_chunks", gpu_like, 20.0, one_pass=True)
    chosen = shapes.chosen
    assert chosen["one_pass"] is True and chosen["by"] == "cells"
    longest = int(max(pairs.premise_lengths.max(), pairs.hypothesis_lengths.max()))
    assert all(p == h for p, h in shapes.cells) and shapes.cells[-1] == (longest, longest)
    batches = batch_order(pairs, 64, "sorted_chunks", np.random.default_rng(0))
    maxima = np.stack([costs.batch_maxima(pairs.premise_lengths, batches),
                       costs.batch_maxima(pairs.hypothesis_lengths, batches)], 1)
    distinct, counts = np.unique(maxima, axis=0, return_counts=True)
    ladder = [(n, n) for n in range(4, longest, 2)]
    best = min(costs.run_seconds([*others, (longest, longest)], distinct, counts, gpu_like,
                                 20.0, 64, None, one_pass=True)[0]
               for size in range(3) for others in itertools.combinations(ladder, size))
    assert chosen["cells"]["seconds"] <= best * 1.03
    # The padding is of what the encoder reads: both sides at the longer one's length.
    batched = NLIBatches(pairs, 64, "sorted_chunks", shapes)
    read = sum(64 * 2 * max(t1, t2) * count
               for (_, t1, t2), count in batched.describe()[1].items())
    real = int(pairs.premise_lengths.sum() + pairs.hypothesis_lengths.sum())
    assert chosen["cells"]["padding"] == pytest.approx(1 - real / read, abs=1e-4)
    # Two passes (a CPU's default) price T1 + T2: the shapes need not be squares.
    assert Shapes.choose(pairs, 64, "sorted_chunks", gpu_like, 20.0).chosen["one_pass"] \
        is False


def test_a_shape_more_must_save_more_than_the_margin():
    """`choose_cells` takes a set of more shapes only where it is predicted faster than
    the best of fewer by more than `margin` of the run's seconds."""
    pairs = varied_pairs(3000)
    batches = batch_order(pairs, 64, "sorted_chunks", np.random.default_rng(0))
    maxima = np.stack([costs.batch_maxima(pairs.premise_lengths, batches),
                       costs.batch_maxima(pairs.hypothesis_lengths, batches)], 1)
    distinct, counts = np.unique(maxima, axis=0, return_counts=True)
    cheap = costs.StepCosts(0.05, 2.0, 0.5, 64, None, "test")  # shapes that pay
    choose = lambda margin: costs.choose_cells(  # noqa: E731
        distinct, counts, cheap, 20.0, 64, margin=margin)
    free = choose(0.0)
    one = costs.run_seconds([tuple(int(v) for v in maxima.max(0))], distinct, counts,
                            cheap, 20.0, 64, None)
    assert len(free[1]) > 1 and free[0] < one[0]
    saved = 1 - free[0] / one[0]  # what the best set saves against the one shape
    assert choose(saved + 0.001)[:2] == one[:2]
    assert len(choose(saved - 0.001)[1]) > 1
    assert costs.MARGIN == 0.02 and choose(costs.MARGIN) == costs.choose_cells(
        distinct, counts, cheap, 20.0, 64)


def test_cheap_compiles_keep_the_padding_grid_and_dear_ones_take_one_shape():
    pairs = varied_pairs(2000)
    cpu_like = costs.StepCosts(0.01, 0.0, 1.0, 64, None, "test")
    kept = Shapes.choose(pairs, 64, "sorted_chunks", cpu_like, 10.0)
    assert kept.chosen["by"] == "padding_grid"
    assert kept == Shapes.fit(pairs, 64, "sorted_chunks")  # today's grid, unchanged
    dear = costs.StepCosts(1000.0, 2.0, 0.001, 64, None, "test")
    one = Shapes.choose(pairs, 64, "sorted_chunks", dear, 10.0)
    assert one.cells == ((int(pairs.premise_lengths.max()),
                          int(pairs.hypothesis_lengths.max())),)


def test_evaluation_runs_in_the_training_shapes_grown_where_it_is_longer(tmp_path):
    train, dev = varied_pairs(2000, 0), varied_pairs(400, 1)
    longer = IdPairs.from_lists([[5] * 90], [[6] * 40], [1])
    costs_file = tmp_path / "costs.jsonl"
    costs_file.write_text("\n".join(json.dumps(row) for row in [
        {"device": "jax: NVIDIA H100"},
        *({"premise": p, "hypothesis": 16, "batch_size": 64, "steps_per_execution": 1,
           "first_train_step_s": 20.0, "first_eval_step_s": 4.0,
           "train_ms_per_step": 2.0 + 0.01 * (p + 16)} for p in (16, 32, 64))]))
    logged = []
    task = NLITask(ExperimentConfig(training=TrainingConfig(epochs=5)),
                   RunPolicy(shape_costs=str(costs_file), jit_compile=True),
                   log=logged.append)
    batches = task.build_inputs(train, training=True)
    shapes = batches.shapes
    assert shapes.chosen["by"] == "cells" and shapes.chosen["costs"]["compile_seconds"] == 24.0
    assert logged[-1].startswith(f"batch shapes by cells ({costs_file}): "
                                 f"{shapes.describe()}; predicted padding grid ")
    assert f"over 5 epoch(s)" in logged[-1]
    evaluation = task.build_inputs(dev, shapes=shapes)
    assert {shape[1:] for shape in evaluation.describe()[1]} <= set(shapes.extended_to(dev).cells)
    assert evaluation.shapes.cells[:-1] == shapes.cells[:-1]
    grown = task.build_inputs(longer, shapes=shapes)
    top = shapes.cells[-1]
    assert set(grown.describe()[1]) == {(64, max(90, top[0]), max(40, top[1]))}
    padding = NLITask(ExperimentConfig(),
                      RunPolicy(shape_costs="padding", jit_compile=True))
    assert padding.build_inputs(train, training=True).shapes == Shapes.fit(
        train, 64, "sorted_chunks")


def test_the_task_prices_shapes_in_one_pass_where_its_encoder_reads_one():
    """`BatchPlan.shapes` passes `one_pass` (resolved; a sentence encoder) to the
    choice: squares for DSAN in one pass, not for a pair-input family (AF-DMN reads the
    pair together) or in two passes."""
    pairs = varied_pairs(2000)
    tiny = {"embedding_dim": 8, "num_heads": 2, "ffn_dim": 16}

    def chosen(model, one_pass):
        config = ExperimentConfig.named(model, epochs=5, **(
            tiny if model == "dsan_snli" else {}))
        task = NLITask(config, RunPolicy(one_pass=one_pass, jit_compile=True,
                                         shape_costs="device"), log=lambda line: None)
        return task.plan.one_pass, task.plan.shapes(pairs).chosen

    one, record = chosen("dsan_snli", True)
    assert one is True and record["one_pass"] is True
    assert chosen("dsan_snli", False)[1]["one_pass"] is False
    pair_one, pair_record = chosen("afdmn_snli", True)
    assert pair_one is False and pair_record["one_pass"] is False
