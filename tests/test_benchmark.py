"""`benchmarks.benchmark` writes the figures users compare machines with (not a timed test)."""

import json
import subprocess
import sys

import pytest

from helpers import ENV, ROOT, cli, ok

from dsan_tf import DSANConfig
from dsan_tf.core.config import ExperimentConfig
from benchmarks.benchmark import (format_side_by_side, forward_flops, frozen_embeddings,
                                   project_epoch)


def test_flop_count_follows_the_formula():
    config = DSANConfig(embedding_dim=300, num_heads=5, ffn_dim=1200)
    d, f, t = 300, 1200, 16
    block = 12 * t * d * d + 4 * t * t * d + 4 * t * d * f
    sentence = 2 * block + 4 * t * (2 * d) ** 2
    classifier = 2 * 16 * d * 300 + 2 * 300 * 3
    assert forward_flops(config, t, t) == 2 * sentence + classifier
    # Attention makes the cost superlinear in T.
    assert forward_flops(config, 64, 64) > 4 * forward_flops(config, 16, 16)
    # The baselines are counted as themselves, not as DSAN.
    disan_sentence = 2 * (10 * t * d * d + 2 * t * t * d) + 4 * t * (2 * d) ** 2
    disan_classifier = 2 * 8 * d * 300 + 2 * 300 * 3
    assert forward_flops(config, t, t, "disan") == 2 * disan_sentence + disan_classifier
    assert forward_flops(config, t, t, "cbow") == 2 * 4 * d * 300 + 2 * 300 * 3


@pytest.mark.parametrize("onednn, xla", [
    ("0", False), ("1", False),
    # XLA's compile of the step is two thirds of the run (60 s against 20 s alone).
    pytest.param("0", True, marks=pytest.mark.slow)], ids=["0", "1", "0-xla"])
def test_benchmark_writes_every_figure(tmp_path, onednn, xla):
    """On any CPU, oneDNN on or off: where TF's CPU allocator keeps no statistics (oneDNN
    off, e.g. AMD CPUs without AVX-512), memory comes from the process, and says so.
    --nojit_compile measures the one setting it names at each length of the sweep; without
    it (the slow case) XLA on and off are compared (at one length: XLA compiles per
    length)."""
    output = tmp_path / "benchmark.json"
    modes = {"0": ("--sweep_lengths=8",), "1": ("--sweep_lengths=4,8",)}[onednn]
    modes += () if xla else ("--nojit_compile",)
    ok(cli("benchmark", "--embedding_dim=16", "--num_heads=4", "--ffn_dim=32",
           "--batch_size=8", "--benchmark_lengths=8", "--train_steps=2",
           "--benchmark_seconds=0.1", "--nobounded_epoch", "--noprogram_size",
           f"--output={output}", *modes,
           env={"TF_ENABLE_ONEDNN_OPTS": onednn}))
    result = json.loads(output.read_text())
    assert result["matmul_peak_gflops"] > 0
    # The paper's model: random ids stand for GloVe's words, whose vectors stay frozen.
    assert result["config"]["trainable_embeddings"] is False
    parameters = result["parameters"]
    assert parameters["total"] - parameters["trainable"] == 20_000 * 16  # the embedding
    assert result["provenance"]["keras"] and result["machine"]["cpus"] > 0
    assert result["machine"]["tf_enable_onednn_opts"] == onednn
    assert result["machine"]["backend"] == result["provenance"]["keras_backend"] == "tensorflow"
    assert result["machine"]["device"].startswith("CPU: ")
    assert set(result["lengths"]) == ({"8"} if onednn == "0" else {"4", "8"})
    for figures in result["lengths"].values():
        for key in ("train_pairs_per_sec", "infer_pairs_per_sec", "roofline_fraction",
                    "peak_memory_bytes"):
            assert figures[key] > 0, key
        source = figures["peak_memory_source"]
        assert source in ("tf_allocator:CPU:0", "tf_allocator:GPU:0", "process_peak_rss",
                          "process_peak_rss_since_start")
        if source.startswith("process"):
            assert figures["peak_memory_bytes"] == figures["peak_rss_bytes"]
    assert set(result["lengths"]["8"]["by_jit_compile"]) == (
        {"false", "true"} if xla else {"false"})
    assert "program" not in result  # --noprogram_size; measured below and in the slow test
    epoch = result["snli_epoch"]
    assert epoch["source"].endswith("snli25k_lengths.json")
    if onednn == "1":
        assert epoch["projected_seconds"] > 0
    else:  # one length: no line to draw, and the record says so
        assert epoch["skipped"] == "the sweep measured fewer than two lengths"
    if onednn == "0" and not xla:  # a flag mistake, once: it stops before TensorFlow loads
        bad = cli("benchmark", "--sweep_lengths=8,x")
        assert bad.returncode != 0 and "--sweep_lengths must be positive integers" in \
            bad.stderr


def test_the_benchmarks_freeze_the_embeddings_unless_asked():
    """Unset, the library trains random vectors; the benchmarks time the paper's model,
    which keeps GloVe frozen, and train them only when the flag says so."""
    unset = ExperimentConfig()
    assert unset.model_config.trainable_embeddings is None
    assert frozen_embeddings(unset).model_config.trainable_embeddings is False
    for asked in (True, False):
        config = unset.replace(trainable_embeddings=asked)
        assert frozen_embeddings(config).model_config.trainable_embeddings is asked


TINY = ("--embedding_dim=16", "--num_heads=4", "--ffn_dim=32", "--batch_size=8",
        "--train_steps=2", "--benchmark_seconds=0.1", "--nobounded_epoch")
NO_TENSORFLOW = """
import sys
sys.modules["tensorflow"] = None  # `import tensorflow` fails
sys.argv[0] = "benchmark"
from benchmarks.benchmark import cli
cli()
"""


@pytest.mark.jax
@pytest.mark.slow  # the whole program in a JAX process: 30 s of CPU
def test_benchmark_runs_on_jax_without_tensorflow(tmp_path):
    output = tmp_path / "jax.json"
    result = subprocess.run(
        [sys.executable, "-c", NO_TENSORFLOW, *TINY, "--benchmark_lengths=8",
         "--sweep_lengths=8", "--jit_compile", "--noprogram_size", f"--output={output}"],
        cwd=ROOT,
        env=dict(ENV, KERAS_BACKEND="jax"), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    result = json.loads(output.read_text())
    machine = result["machine"]
    assert machine["backend"] == "jax" and machine["backend_version"]
    assert result["provenance"]["tensorflow"] is None
    assert set(result["lengths"]["8"]["by_jit_compile"]) == {"true"}  # as --jit_compile says
    assert result["lengths"]["8"]["train_pairs_per_sec"] > 0
    assert result["snli_epoch"]["skipped"] == "the sweep measured fewer than two lengths"
    assert "program" not in result  # measured on JAX by the side-by-side test (slow)


def test_the_training_program_is_counted():
    """`benchmarks.program_size` (the benchmark's `program`): the gradient's and the whole
    step's graph ops on TensorFlow, the step larger by the optimizer's update; HLO text's
    instructions counted one a line, fused computations' included."""
    import keras

    import dsan_tf
    from dsan_tf.core.task import NLITask
    from benchmarks import program_size

    config = dsan_tf.model_config("dsan", vocab_size=30, embedding_dim=8, num_heads=2,
                                  ffn_dim=16, classifier_units=8)
    model = NLITask().compile(dsan_tf.build_model("dsan", config))
    measured = program_size.measure(model, 4, 6, 30)
    assert (measured["batch_size"], measured["length"]) == (4, 6)
    gradient, step = measured["gradient"], measured["step"]
    if keras.backend.backend() == "jax":  # the JAX pass (`KERAS_BACKEND=jax pytest`)
        assert 1000 < gradient["hlo_before_optimisation"] < step["hlo_before_optimisation"]
        assert gradient["hlo_after_optimisation"] > 0 and gradient["compile_seconds"] > 0
    else:
        assert 1000 < gradient["graph_ops"] < step["graph_ops"]
        assert gradient["trace_seconds"] > 0
    hlo = """HloModule m
%fused (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %e = f32[2]{0} exponential(f32[2]{0} %p)
}
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %f = f32[2]{0} fusion(f32[2]{0} %a), kind=kLoop, calls=%fused
}"""
    assert program_size.count_instructions(hlo) == 4


def test_gpu_kernels_are_counted_from_an_optimised_module():
    """`program_size.gpu_kernels`: what a GPU launches for one run of a compiled module:
    fusions, library calls and copies, not the bookkeeping of buffers; a loop's body once
    (one step of a scan), its condition not."""
    from benchmarks import program_size

    hlo = """HloModule jit_scanned
%fused_exp (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %e = f32[2]{0} exponential(f32[2]{0} %p)
}
%body (state: (s32[], f32[2])) -> (s32[], f32[2]) {
  %state = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %x = f32[2]{0} get-tuple-element(%state), index=1
  %f = f32[2]{0} fusion(f32[2]{0} %x), kind=kLoop, calls=%fused_exp
  %g = (f32[2]{0}, s8[0]{0}) custom-call(f32[2]{0} %f), custom_call_target="__cublas$gemm"
  %n = s32[] add(s32[] %i, s32[] %i)
  ROOT %t = (s32[], f32[2]{0}) tuple(%n, %f)
}
%condition (state: (s32[], f32[2])) -> pred[] {
  %state = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %k = s32[] constant(32)
  ROOT %c = pred[] compare(s32[] %i, s32[] %k), direction=LT
}
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %b = f32[2]{0} copy(f32[2]{0} %a)
  %z = s32[] constant(0)
  %s = (s32[], f32[2]{0}) tuple(%z, %b)
  %w = (s32[], f32[2]{0}) while(%s), condition=%condition, body=%body
  ROOT %r = f32[2]{0} get-tuple-element(%w), index=1
}"""
    assert program_size.gpu_kernels(hlo) == {
        "kernels": 4, "loop_body": 3,
        "by_kind": {"copy": 1, "fusion:kLoop": 1, "custom-call:__cublas$gemm": 1, "add": 1},
        # Written and read: the copy 8 + 8, the fusion 8 + 8, the gemm (8 + 0) + 8, the
        # add 4 + 4 + 4; operands named without their shape are looked up.
        "bytes": 60}
    unshaped = hlo.replace("fusion(f32[2]{0} %x)", "fusion(%x)")
    assert program_size.gpu_kernels(unshaped)["bytes"] == 60


def test_gpu_kernels_count_the_slices_a_fusion_reads_not_the_whole_operand():
    """An operand that a fusion reads only through slices (a step's batch out of the scan's
    stack) counts the slices' bytes; one read otherwise counts whole, and so does an
    operand XLA prints past the fifth ("/*index=5*/%name")."""
    from benchmarks import program_size

    hlo = """HloModule jit_step
%fused_take (p0: f32[32,64], p1: s32[], p2: f32[64]) -> f32[64] {
  %p0 = f32[32,64]{1,0} parameter(0)
  %b = f32[32,64]{1,0} bitcast(%p0)
  %p1 = s32[] parameter(1)
  %z = s32[] constant(0)
  %d = f32[1,64]{1,0} dynamic-slice(%b, %p1, %z), dynamic_slice_sizes={1,64}
  %r = f32[64]{0} bitcast(%d)
  %p2 = f32[64]{0} parameter(2)
  ROOT %a = f32[64]{0} add(%r, %p2)
}
%fused_sum (q0: f32[32,64], q1: f32[64]) -> f32[64] {
  %q0 = f32[32,64]{1,0} parameter(0)
  %s = f32[1,64]{1,0} slice(%q0), slice={[0:1], [0:64]}
  %q1 = f32[64]{0} parameter(1)
  %t = f32[64]{0} bitcast(%s)
  %n = f32[] constant(0)
  %w = f32[64]{0} reduce(%q0, %n), dimensions={0}, to_apply=%add
  ROOT %u = f32[64]{0} add(%t, %w)
}
ENTRY %main (xs: f32[32,64], i: s32[], v: f32[64]) -> f32[64] {
  %xs = f32[32,64]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %v = f32[64]{0} parameter(2)
  %f = f32[64]{0} fusion(%xs, %i, %v), kind=kLoop, calls=%fused_take
  %g = f32[64]{0} fusion(%xs, %f), kind=kLoop, calls=%fused_sum
  ROOT %c = f32[6,64]{1,0} concatenate(%v, %v, %v, %v, %v, /*index=5*/%g), dimensions={0}
}"""
    # %f: one row of 256 bytes of the 8,192, the index 4, %v 256, writes 256;
    # %g: %xs whole (it is reduced too) 8,192, %f 256, writes 256;
    # %c: six operands of 256 (the sixth printed past the fifth), writes 1,536.
    assert program_size.gpu_kernels(hlo)["bytes"] == (
        256 + 4 + 256 + 256) + (8192 + 256 + 256) + (6 * 256 + 1536)


def test_a_gpu_checks_record_describes_its_gpu_for_deviceless_compiles(tmp_path):
    """`program_size.read_target`: the GPU check's `target_config` (XLA's description of
    the GPU it ran on) or a text file of one; a record made on a CPU is refused, saying
    why."""
    from benchmarks import program_size

    record = tmp_path / "gpu_check.json"
    record.write_text(json.dumps({"target_config": program_size.H100_TARGET}))
    text = tmp_path / "h200.txtpb"
    text.write_text('device_description_str: "NVIDIA H200"\n')
    assert program_size.read_target(str(record)) == program_size.H100_TARGET
    assert program_size.read_target(str(text)).startswith('device_description_str: "NVIDIA')
    record.write_text(json.dumps({"target_config": None}))
    with pytest.raises(ValueError, match="no target_config: it was not run on a GPU"):
        program_size.read_target(str(record))


def test_shape_costs_plans_grids_from_a_record(capsys):
    """`benchmarks.shape_costs --plan`, as docs/PERFORMANCE.md runs it (`--config`, which
    it once refused): the H200's record read, grids of one to three shapes printed with
    their padding and the seconds of a schedule."""
    from benchmarks import shape_costs

    assert shape_costs.main(["--config=dsan_snli",
                             "--plan=records/runs/shape_costs_h200.jsonl"]) == 0
    printed = capsys.readouterr().out
    assert "padding" in printed and "96" in printed


def test_shape_costs_says_whether_a_precision_beat_float32(tmp_path, capsys):
    """`shape_costs --faster=FILE --mixed_precision=P` (the GPU session's script runs the
    bfloat16 GPU check only where it pays): exit 0 when P's best scan beats every float32
    scan of the same shape with the default layout; scans of other layouts, flags,
    precisions of matmuls or shapes do not count, and a file without both says so and
    answers no."""
    from benchmarks import shape_costs

    def scan(ms, policy="float32", **others):
        return json.dumps({"scan32_first_call_s": 17.0, "scan32_ms_per_step": ms,
                           "premise": 23, "hypothesis": 24,
                           "dtype_policy": policy, "packed_weights": False,
                           "flat_moments": False, "xla_flags": "",
                           "matmul_precision": None, **others})

    records = tmp_path / "scan.jsonl"
    records.write_text("\n".join([
        json.dumps({"device": "jax: gpu", "preset": "dsan_snli"}),  # a header: no scan
        scan(1.35), scan(1.30, packed_weights=True), scan(1.10, flat_moments=True),
        scan(1.00, matmul_precision="tensorfloat32"), scan(1.36),
        scan(0.50, premise=16, hypothesis=16)]) + "\n")  # another shape: not compared
    ask = ["--faster", str(records), "--mixed_precision=mixed_bfloat16"]
    with records.open("a") as stream:
        stream.write(scan(1.40, "mixed_bfloat16") + "\n")
    assert shape_costs.main(ask) == 1  # slower than both float32 scans of the default
    assert "at 23x24: mixed_bfloat16 1.4, float32 [1.35, 1.36]" in capsys.readouterr().out
    with records.open("a") as stream:
        stream.write(scan(1.34, "mixed_bfloat16") + "\n")
    assert shape_costs.main(ask) == 0
    other = tmp_path / "float32_only.jsonl"
    other.write_text(scan(1.35) + "\n")
    assert shape_costs.main(["--faster", str(other), "--mixed_precision=mixed_bfloat16"]) == 1
    assert "no scans of one shape in both float32 and mixed_bfloat16" in \
        capsys.readouterr().out


@pytest.mark.slow
def test_shape_costs_measures_a_shape(tmp_path):
    """`benchmarks.shape_costs` measuring: a header and a line a measurement, appended as
    made (one shape, a tiny model)."""
    from benchmarks import shape_costs

    output = tmp_path / "costs.jsonl"
    assert shape_costs.main(["--config=dsan_snli", "--shapes=6x5", "--steps=4",
                             "--steps_per_execution=",
                             "--size=embedding_dim=8,num_heads=2,ffn_dim=16",
                             f"--output={output}"]) == 0
    header, line = (json.loads(text) for text in output.read_text().splitlines())
    assert header["preset"] == "dsan_snli" and header["embedding_dim"] == 8
    assert (line["premise"], line["hypothesis"], line["steps"]) == (6, 5, 4)
    assert line["train_ms_per_step"] > 0
    assert line["first_train_step_s"] > 0 and line["eval_ms_per_step"] > 0


def test_side_by_side_epoch_projection_and_table():
    """The projection weights each length bucket's batches by its step time; the table
    names the fastest backend by the geometric mean of its best mode."""
    profile = {"pairs": 549_367, "cells": [[8, 8, 64 * 10], [16, 8, 64 * 5]]}
    per_length = {"8": {"train_pairs_per_sec": 64.0}, "16": {"train_pairs_per_sec": 32.0}}
    # 10 batches at T 8 (1 s each) and 5 at T 12, halfway to T 16's 2 s: 1.5 s each.
    assert project_epoch(profile, per_length, 64)["projected_seconds"] == pytest.approx(17.5)
    # A busy machine timed T 16 faster than T 8: past the sweep the step time stays at the
    # faster one's (1 s) instead of falling below zero.
    noisy = {"8": {"train_pairs_per_sec": 32.0}, "16": {"train_pairs_per_sec": 64.0}}
    long = {"pairs": 549_367, "cells": [[64, 64, 64 * 10]]}
    assert project_epoch(long, noisy, 64)["projected_seconds"] == pytest.approx(10.0)

    def result(version, speeds):
        return {"machine": {"backend_version": version}, "by_length": {
            str(t): {"false": {"train_pairs_per_sec": v, "roofline_fraction": 0.5,
                               "infer_pairs_per_sec": 3 * v}} for t, v in speeds.items()}}
    table = format_side_by_side({"tensorflow": result("2.21", {16: 200, 32: 100}),
                                 "jax": result("0.10", {16: 400, 32: 60})})
    assert "fastest to train here: jax (tensorflow 141, jax 155 pairs/s" in table
    assert len(table.splitlines()) == 1 + 4 + 1


@pytest.mark.slow
@pytest.mark.jax
def test_benchmark_side_by_side_on_two_backends(tmp_path):
    output = tmp_path / "both.json"
    stdout = ok(cli("benchmark", *TINY, "--backends=tensorflow,jax", "--benchmark_lengths=8",
                    f"--output={output}"))
    assert "fastest to train here: " in stdout
    result = json.loads(output.read_text())["side_by_side"]
    assert [r["machine"]["backend"] for r in result.values()] == ["tensorflow", "jax"]
    assert set(result["tensorflow"]["by_length"]["8"]) == {"false", "true"}
    tensorflow = result["tensorflow"]["program"]  # the training program's size
    assert 0 < tensorflow["gradient"]["graph_ops"] < tensorflow["step"]["graph_ops"]
    for part in ("gradient", "step"):  # XLA's program: before and after its optimisation
        figures = result["jax"]["program"][part]
        assert figures["hlo_before_optimisation"] > 0 and figures["hlo_after_optimisation"] > 0
        assert figures["compile_seconds"] > 0
    assert (result["jax"]["program"]["step"]["hlo_before_optimisation"] >
            result["jax"]["program"]["gradient"]["hlo_before_optimisation"])
    refused = cli("benchmark", "--backends=tensorflow,mxnet")
    assert refused.returncode == 1 and "--backends: mxnet not installed here" in refused.stderr


@pytest.mark.slow
def test_pipeline_benchmark_honours_the_model_flags(tmp_path):
    """It builds its model through the task, so --model and --learning_rate apply."""
    output = tmp_path / "pipeline.json"
    ok(cli("pipeline_benchmark", "--train_data=synthetic:word_order/dev", "--model=disan",
           "--embedding_dim=16", "--num_heads=4", "--learning_rate=0.01", "--batch_size=16",
           "--pipeline_epochs=1", "--train_steps=2", f"--output={output}"))
    result = json.loads(output.read_text())
    assert result["model"] == "disan" and result["batching"] == "sorted_chunks"
    assert result["pipeline_pairs_per_sec"] > 0 and result["train_pairs_per_sec"] > 0
    assert result["padding_fraction"] == result["padding_fraction_sorted_chunks"]
    for batching in ("sorted_chunks", "premise_buckets", "length_buckets"):
        assert result[f"padding_fraction_{batching}"] <= result["padding_fraction_plain"]


def test_the_bounded_epoch_times_each_shape_once_and_projects_snli(monkeypatch):
    """The epoch in bounded shapes: pairs of the committed SNLI length profile, at most 12
    shapes, each shape's first step apart, the steady steps of every batch scaled to
    SNLI's 549,367 pairs."""
    import numpy as np

    from dsan_tf.core.config import DataConfig, ExperimentConfig
    from dsan_tf.core.task import NLITask
    from benchmarks import benchmark

    class Model:
        shapes = []

        def train_on_batch(self, inputs, labels, sample_weight):
            self.shapes.append((len(labels), *(ids.shape[1] for ids in inputs.values())))
            assert len(labels) == len(sample_weight) == 64
            assert set(np.unique(sample_weight)) <= {0.0, 1.0}

    # Each steady step takes 2 ms (timed), whatever the shape.
    monkeypatch.setattr(benchmark, "timed", lambda step, seconds, steps: 0.002)
    task = NLITask(ExperimentConfig(data=DataConfig(batch_size=64)))
    result = benchmark.bounded_epoch(Model(), task, benchmark.LENGTH_PROFILE, 0.1)
    assert 4 <= result["shapes"] <= 12
    assert len(Model.shapes) == len(set(Model.shapes)) == result["shapes"]  # first steps
    assert 0.2 < result["padding_fraction"] < 0.6
    batches = sum(shape["batches"] for shape in result["per_shape"].values())
    assert batches == -(-25_299 // 64)  # sorted chunks: one partial batch, filled
    assert result["projected_seconds"] == pytest.approx(batches * 0.002 * 549_367 / 25_299)
    assert result["train_pairs_per_sec"] == pytest.approx(549_367 / result["projected_seconds"])




@pytest.mark.jax
@pytest.mark.slow  # a JAX process compiling the scan
def test_the_quick_gpu_ab_times_the_scan_alone(tmp_path):
    """`shape_costs --scan_only=N`, the GPU session's A/B: one program, N steps as a
    `lax.scan` on the device's batches, whole chunks of N only, the record saying what it
    ran under (XLA_FLAGS, the dtype policy); with `--profile`, a trace of the scan's first
    two calls summarised by HLO instruction of the program it ran."""
    output, profile = tmp_path / "scan.jsonl", tmp_path / "profile"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.shape_costs", "--shapes=6x5", "--steps=5",
         "--scan_only=2", "--size=embedding_dim=8,num_heads=2,ffn_dim=16",
         f"--output={output}", f"--profile={profile}"], cwd=ROOT,
        env=dict(ENV, KERAS_BACKEND="jax"), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    header, line = (json.loads(text) for text in output.read_text().splitlines())
    assert header["device"] == "jax: cpu" and header["embedding_dim"] == 8
    assert (line["premise"], line["hypothesis"], line["steps"]) == (6, 5, 4)
    assert line["scan2_ms_per_step"] > 0 and line["scan2_first_call_s"] > 0
    assert line["xla_flags"] == ENV.get("XLA_FLAGS", "")
    assert line["dtype_policy"] == "float32" and line["matmul_precision"] is None
    assert not any(key.startswith(("fit", "jit_loop", "train_")) for key in line)
    # The profile: 2 calls of 2 steps; its figures in the record, its instructions those
    # of the scan's compiled program, each a whole number of calls in the 4 steps.
    summary = json.loads((profile / "kernels.json").read_text())
    assert summary["steps"] == 4 and line["profile"]["steps"] == 4
    assert line["profile"]["kernels"] == summary["kernels"] > 0
    assert 0 < summary["busy_ms"] <= summary["span_ms"]
    program = (profile / "scan_hlo.txt").read_text()
    assert "while" in program and summary["top"]
    for entry in summary["top"]:
        assert f"%{entry['op']} " in program or f"{entry['op']} = " in program, entry
        assert (entry["calls"] * 4) % 1 == 0 and entry["us"] >= 0
    assert (profile / "trace.xplane.pb.gz").stat().st_size > 0
