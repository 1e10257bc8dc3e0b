"""Batch shapes chosen by what they cost on the device (issue 48): the cost line fitted to
measurements, the choice against every alternative, the batches it gives, evaluation in
the training shapes, and the record of the choice."""

import itertools
import json
import pathlib

import numpy as np
import pytest

from dsan_tf.data import costs
from dsan_tf.data.batching import IdPairs, NLIBatches, Shapes, batch_order
from dsan_tf.experiment.config import DataConfig, ExperimentConfig, TrainingConfig
from dsan_tf.experiment.task import NLITask
from tests.test_batching import all_pairs, rows, varied_pairs

RUNS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "runs"


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
    task = NLITask(ExperimentConfig(data=DataConfig(shape_costs=str(costs_file)),
                                    training=TrainingConfig(jit_compile=True, epochs=5)),
                   log=logged.append)
    batches = task.numpy_batches(train, training=True)
    shapes = batches.shapes
    assert shapes.chosen["by"] == "cells" and shapes.chosen["costs"]["compile_seconds"] == 24.0
    assert logged[-1].startswith(f"batch shapes by cells ({costs_file}): "
                                 f"{shapes.describe()}; predicted padding grid ")
    assert f"over 5 epoch(s)" in logged[-1]
    evaluation = task.numpy_batches(dev, shapes=shapes)
    assert {shape[1:] for shape in evaluation.describe()[1]} <= set(shapes.extended_to(dev).cells)
    assert evaluation.shapes.cells[:-1] == shapes.cells[:-1]
    grown = task.numpy_batches(longer, shapes=shapes)
    top = shapes.cells[-1]
    assert set(grown.describe()[1]) == {(64, max(90, top[0]), max(40, top[1]))}
    padding = NLITask(ExperimentConfig(data=DataConfig(shape_costs="padding"),
                                       training=TrainingConfig(jit_compile=True)))
    assert padding.numpy_batches(train, training=True).shapes == Shapes.fit(
        train, 64, "sorted_chunks")
