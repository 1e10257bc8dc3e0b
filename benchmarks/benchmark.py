"""Speed, efficiency and memory of the model on this machine, on any Keras backend.

    python -m benchmarks.benchmark [--output=FILE.json] [--mixed_precision=mixed_bfloat16]
        [--benchmark_lengths=16,32] [--sweep_lengths=8,16,...,512] [--model=disan] [model flags]
    python -m benchmarks.benchmark --backends=tensorflow,jax,torch [--output=FILE.json]

For the model the flags describe (DSAN at the paper's size by default: d_e 300, 5 heads,
d_ff 1200, its embeddings frozen as the paper's, --trainable_embeddings to train them;
--model=disan or cbow for the baselines) at --batch_size (64), with random token
ids (no padding) in premise and hypothesis alike, on the backend KERAS_BACKEND names
(TensorFlow, JAX or PyTorch; it needs no TensorFlow on JAX or PyTorch):

1. The dense-matmul peak of this machine, measured on matrices of the model's shapes.
2. Training and inference throughput (pairs/s) at --benchmark_lengths, in each compile
   mode of the backend (`jit_modes`: XLA on and off on TensorFlow and JAX; PyTorch
   eager; --jit_compile or --nojit_compile measures that one only), and the roofline
   fraction: achieved GFLOP/s (from an analytic FLOP count, `forward_flops`; training =
   3x forward) over the matmul peak.
3. A sweep over --sweep_lengths: time per pair and peak memory of a training step, in the
   faster mode of 2. Memory comes from the device allocator where it keeps statistics
   (GPUs; TF's CPU allocator with oneDNN on), else from the process's peak resident
   memory; each figure names its source (`peak_memory_source`, `backends.Memory`).
   The size of the training program at the first --benchmark_lengths
   (`benchmarks.program_size`: graph ops and tracing seconds on TensorFlow, HLO
   instructions before and after XLA's optimisation and compile seconds on JAX).
4. The projected time of one SNLI epoch (549,367 pairs): the sweep's step times,
   interpolated at each length bucket of SNLI's real length distribution
   (--length_profile: the 25k-pair training file's, committed in records/runs/).

--backends runs 1-2 on each named backend in a fresh process (Keras picks its backend once
per process) at --benchmark_lengths (16,32,64 unless given) and prints them side by side.
"""

import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import keras
import numpy as np
from absl import flags

from dsan_tf.data import batching
from dsan_tf.core import rundir
from dsan_tf.core.optimization import default_jit_compile
from dsan_tf.core.task import NLITask
from dsan_tf.models.backbone import count_parameters
from dsan_tf.speed import sentence_programs
from dsan_tf.programs import program
from benchmarks import backends, program_size
from benchmarks.program_size import VOCAB_SIZE
from dsan_tf.programs import flags as project_flags

FLAGS = project_flags.FLAGS
SNLI_TRAIN_PAIRS = 549_367
LENGTH_PROFILE = pathlib.Path(__file__).resolve().parents[1] / "records/runs/snli25k_lengths.json"
# Backends measured in their default compile mode only: torch.compile recompiles for
# minutes per shape on a CPU.
DEFAULT_JIT_ONLY = ("torch",)


def define_flags():
    project_flags.define_model_flags()
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_step_flags()
    project_flags.define_output_flag()
    flags.DEFINE_float("benchmark_seconds", 2.0, "Time each measurement for at least this long.")
    flags.DEFINE_list("benchmark_lengths", ["16", "32"], "Sentence lengths of the compile "
                      "(XLA) on/off comparison; 16,32,64 with --backends.")
    flags.DEFINE_list("sweep_lengths", ["8", "16", "32", "64", "128", "256", "512"],
                      "Sentence lengths of the time and memory sweep.")
    flags.DEFINE_boolean("sweep", True, "Run the sweep and the SNLI epoch projection.")
    flags.DEFINE_boolean("program_size", True, "Measure the training program's size and "
                         "the seconds to build it (benchmarks.program_size).")
    flags.DEFINE_integer("train_steps", 20, "Timed training steps per comparison (after a "
                         "warm-up).", lower_bound=1)
    flags.DEFINE_boolean("bounded_epoch", True, "Also time an SNLI epoch of the profile's "
                         "lengths in bounded shapes (compiled, XLA), each shape's first step "
                         "apart (--nobounded_epoch: skip it).")
    flags.DEFINE_string("length_profile", str(LENGTH_PROFILE), "SNLI's length buckets (JSON, "
                        "`length_profile`) for the epoch projection; empty: none.")
    flags.DEFINE_list("backends", [], "Measure these Keras backends side by side, each in "
                      f"its own process ({', '.join(backends.BACKENDS)}).")


def forward_flops(config, premise_length, hypothesis_length, model=None):
    """Floating-point operations (a multiply-add is 2) of one pair's forward pass: the
    matrix products, all but a few percent of the work (each family's `forward_flops`
    says what it counts)."""
    from dsan_tf.models import family, registry

    count = family(model or registry.DEFAULT).forward_flops
    if count is None:
        raise ValueError(f"no FLOP count for model {model!r}.")
    return count(config, premise_length, hypothesis_length)


def timed(step, min_seconds, min_calls=3):
    """Median seconds per call of `step` over at least min_calls calls and min_seconds,
    after two warm-up calls (the first compiles on JAX and with XLA).

    The median, not the mean: on a shared 2-core machine a few calls are slowed by other
    processes, and the first calls after tracing still fill oneDNN's primitive cache.
    """
    step()
    step()
    durations, started = [], time.perf_counter()
    while len(durations) < min_calls or time.perf_counter() - started < min_seconds:
        before = time.perf_counter()
        step()
        durations.append(time.perf_counter() - before)
    return statistics.median(durations)


def matmul_peak(config, lengths, batch_size, seconds):
    """GFLOP/s of a matrix product on the model's dense shapes; the best is the machine's
    peak."""
    # DSAN's d_ff; a family without one: DSAN's 4·d_e, so every family meets the same shapes.
    d = config.embedding_dim
    f = getattr(config, "ffn_dim", 4 * d)
    results = []
    for rows in sorted({batch_size * t for t in lengths}):
        for inner, outer in ((d, d), (d, f), (f, d), (2 * d, 2 * d)):
            a = keras.random.normal((rows, inner), seed=0)
            b = keras.random.normal((inner, outer), seed=1)
            seconds = timed(lambda: backends.synchronize(keras.ops.matmul(a, b)),
                            min_seconds=seconds / 4)
            results.append({"shape": [rows, inner, outer],
                            "gflops": 2 * rows * inner * outer / seconds / 1e9})
    return max(r["gflops"] for r in results), results


def build(task, jit_compile):
    """A compiled model of the task's configuration, seeded, for random token ids."""
    keras.utils.set_random_seed(task.config.data.seed)
    return task.compile(task.build_model(VOCAB_SIZE), jit_compile)


def parameters(model):
    """{total, trainable}: the model's parameter counts (the paper's DSAN: 4.7M, without
    its embedding)."""
    return {"total": count_parameters(model.weights),
            "trainable": count_parameters(model.trainable_weights)}


def random_batch(length, batch_size, seed):
    rng = np.random.default_rng(seed)
    ids = lambda: rng.integers(2, VOCAB_SIZE, (batch_size, length)).astype("int32")  # noqa: E731
    return {"premise": ids(), "hypothesis": ids()}, rng.integers(0, 3, batch_size)


def measure(model, task, length, peak, seconds, steps=3):
    """Throughput, roofline fraction and memory of training and inference at one length
    (train_on_batch and predict_on_batch return NumPy values: each call waits for its
    result)."""
    batch_size = task.config.data.batch_size
    inputs, labels = random_batch(length, batch_size, task.config.data.seed)
    with backends.Memory() as memory:
        train_seconds = timed(lambda: model.train_on_batch(inputs, labels), seconds, steps)
    infer_seconds = timed(lambda: model.predict_on_batch(inputs), seconds, steps)
    flops = forward_flops(task.config.model_config, length, length,
                          task.config.model) * batch_size
    result = {
        "train_pairs_per_sec": batch_size / train_seconds,
        "infer_pairs_per_sec": batch_size / infer_seconds,
        "train_ms_per_pair": 1e3 * train_seconds / batch_size,
        "train_gflops": 3 * flops / train_seconds / 1e9,
        "infer_gflops": flops / infer_seconds / 1e9,
        "peak_memory_bytes": memory.peak_bytes,
        "peak_memory_source": memory.source,
        "peak_rss_bytes": memory.peak_rss_bytes,
    }
    result["roofline_fraction"] = result["train_gflops"] / peak
    result["infer_roofline_fraction"] = result["infer_gflops"] / peak
    return result


def gib(value):
    return "unknown" if value is None else f"{value / 2**30:.2f} GiB"


def compare_jit(models, task, lengths, peak, seconds, steps):
    """Training and inference at `lengths` in each compile mode of `models`:
    ({length: {"false": ..., "true": ...}}, the setting faster at most lengths)."""
    # A fresh process's first training steps run slower (thread pools, allocator, oneDNN's
    # primitive cache; measured: 68% of peak at T 16 first, 75% later), so warm it up once.
    first = next(iter(models))
    measure(models[first], task, lengths[0], peak, seconds, steps=3)
    compared = {}
    for jit_compile, model in models.items():
        for length in lengths:
            r = measure(model, task, length, peak, seconds, steps=steps)
            compared.setdefault(length, {})[str(jit_compile).lower()] = r
            print(f"T={length:<4} jit_compile={jit_compile!s:<5} train "
                  f"{r['train_pairs_per_sec']:8.1f} pairs/s ({r['roofline_fraction']:.0%} of "
                  f"peak)  inference {r['infer_pairs_per_sec']:8.1f} pairs/s")
    votes = {mode: sum(max(c, key=lambda m: c[m]["train_pairs_per_sec"]) == str(mode).lower()
                       for c in compared.values()) for mode in models}
    return compared, max(models, key=lambda mode: votes[mode])


def sweep(model, task, lengths, peak, seconds, jit_compile, compared):
    """Time per pair and peak memory of a training step at each length, until memory runs
    out: {str(length): result}."""
    per_length = {}
    for length in lengths:
        try:
            result = measure(model, task, length, peak, seconds,
                             steps=1 if length >= 256 else 3)
        except Exception as error:  # noqa: BLE001 (each backend names it differently)
            if not backends.is_out_of_memory(error):
                raise
            per_length[str(length)] = {"error": "out of memory"}
            print(f"T={length:<4} out of memory; longer lengths skipped")
            break
        result["jit_compile"] = jit_compile
        if length in compared:
            result["by_jit_compile"] = compared[length]
        per_length[str(length)] = result
        print(f"T={length:<4} train {result['train_ms_per_pair']:8.2f} ms/pair "
              f"({result['roofline_fraction']:.0%})  inference {result['infer_pairs_per_sec']:8.1f}"
              f" pairs/s  peak memory {gib(result['peak_memory_bytes'])} "
              f"({result['peak_memory_source']}; process {gib(result['peak_rss_bytes'])})")
    return per_length


def length_profile(examples, buckets, max_length):
    """SNLI's lengths as the epoch projection needs them: how many pairs fall in each
    (premise, hypothesis) length bucket (the bucket's upper bound; longer sentences are cut
    to `max_length`). `examples` are (premise tokens, hypothesis tokens) counts."""
    def bound(length):
        length = min(length, max_length)
        return next((b for b in buckets if length <= b), max_length)

    cells = {}
    for premise, hypothesis in examples:
        key = (bound(premise), bound(hypothesis))
        cells[key] = cells.get(key, 0) + 1
    return {"pairs": len(examples), "buckets": list(buckets), "max_length": max_length,
            "cells": [[p, h, n] for (p, h), n in sorted(cells.items())]}


def project_epoch(profile, per_length, batch_size):
    """Seconds of one SNLI epoch: per length bucket, its batches (the profile's pairs
    scaled to SNLI's 549,367) times the sweep's step time interpolated at the bucket's mean
    length (linear in T, as measured; extrapolated past the sweep)."""
    measured = sorted((int(t), batch_size / r["train_pairs_per_sec"])
                      for t, r in per_length.items() if "train_pairs_per_sec" in r)
    if len(measured) < 2:
        return {"skipped": "the sweep measured fewer than two lengths"}
    lengths, steps = zip(*measured)

    def step_seconds(length):
        i = min(max(np.searchsorted(lengths, length), 1), len(lengths) - 1)
        (t0, s0), (t1, s1) = measured[i - 1], measured[i]
        # Noise on a busy machine can time a longer length faster; extrapolating that
        # slope would give negative times, so never go below the pair's faster step.
        return max(s0 + (s1 - s0) * (length - t0) / (t1 - t0), min(s0, s1))

    scale = SNLI_TRAIN_PAIRS / profile["pairs"]
    seconds = sum(math.ceil(n * scale / batch_size) * step_seconds((p + h) / 2)
                  for p, h, n in profile["cells"])
    return {"projected_seconds": seconds, "train_pairs_per_sec": SNLI_TRAIN_PAIRS / seconds,
            "method": "sweep step times interpolated at each length bucket's mean length",
            "paper_seconds_gtx_1080ti": 693}


def snli_epoch(path, per_length, batch_size):
    if not path:
        return {"skipped": "no --length_profile"}
    if not os.path.exists(path):
        return {"skipped": f"{path} does not exist"}
    with open(path, encoding="utf-8") as stream:
        profile = json.load(stream)
    return dict(project_epoch(profile, per_length, batch_size), source=str(path))


def bounded_epoch(model, task, path, seconds, steps=3):
    """One SNLI epoch in the batches training uses where the step is compiled: pairs of the
    profile's length distribution (random ids, `IdPairs.like_profile`) in sorted chunks of
    bounded shapes (`NLIBatches`). Each shape's first step (its compilation) and its steady
    step are timed; the epoch is the steady steps of every batch, scaled to SNLI's pairs."""
    if not path or not os.path.exists(path):
        return {"skipped": f"no length profile ({path or 'none given'})"}
    with open(path, encoding="utf-8") as stream:
        profile = json.load(stream)
    settings = task.config.data
    pairs = batching.IdPairs.like_profile(profile, profile["pairs"], settings.seed, VOCAB_SIZE)
    shapes = batching.Shapes.fit(pairs, settings.batch_size, settings.batching, settings.seed,
                                 max_length=settings.max_length)
    batches = batching.NLIBatches(pairs, settings.batch_size, settings.batching, shapes,
                                  seed=settings.seed)
    padding, counts = batches.describe()
    compile_seconds = step_seconds = 0.0
    per_shape = {}
    for key, (inputs, labels, weights) in sorted(batches.first_of_each_shape().items()):
        started = time.perf_counter()
        model.train_on_batch(inputs, labels, sample_weight=weights)
        compile_seconds += time.perf_counter() - started
        step = timed(lambda: model.train_on_batch(inputs, labels, sample_weight=weights),
                     seconds, steps)
        per_shape["x".join(map(str, key))] = {"batches": counts[key], "step_seconds": step}
        step_seconds += counts[key] * step
    epoch = step_seconds * SNLI_TRAIN_PAIRS / len(pairs)
    return {"shapes": len(counts), "padding_fraction": padding,
            "premise_grid": list(shapes.premise_grid),
            "hypothesis_grid": list(shapes.hypothesis_grid), "per_shape": per_shape,
            "first_steps_seconds": compile_seconds, "projected_seconds": epoch,
            "train_pairs_per_sec": SNLI_TRAIN_PAIRS / epoch, "source": str(path),
            "paper_seconds_gtx_1080ti": 693}


def jit_modes(backend):
    """The compile modes measured on `backend`, its default first
    (`dsan_tf.core.optimization.default_jit_compile`)."""
    default = default_jit_compile(backend)
    return (default,) if backend in DEFAULT_JIT_ONLY else (default, not default)


def per_length_programs(models):
    """{"true"/"false" (jit_compile): whether that model's steps are per-length programs
    (`dsan_tf.speed.sentence_programs`: JAX on a CPU, by default)}."""
    return {str(jit).lower(): sentence_programs.applies(model) for jit, model in models.items()}


def benchmark(task, compared_lengths, sweep_lengths):
    """Steps 1-4 of the module docstring on the running backend: the results dict."""
    backend = keras.backend.backend()
    lengths = sorted(set(sweep_lengths) | set(compared_lengths))
    config, seconds = task.config.model_config, FLAGS.benchmark_seconds
    peak, shapes = matmul_peak(config, lengths, task.config.data.batch_size, seconds)
    print(f"{backend}: dense matmul peak on the model's shapes: {peak:.1f} GFLOP/s")
    modes = (FLAGS.jit_compile,) if FLAGS["jit_compile"].present else jit_modes(backend)
    # One model per compile mode, reused by the sweep: building and tracing a model
    # costs more than the measurements of a small one.
    models = {jit_compile: build(task, jit_compile) for jit_compile in modes}
    compared, faster = compare_jit(models, task, compared_lengths, peak, seconds,
                                   FLAGS.train_steps)
    results = {
        "machine": backends.info(), "provenance": rundir.provenance(),
        "model": task.config.model, "config": config.to_dict(),
        "parameters": parameters(models[modes[0]]),
        "batch_size": task.config.data.batch_size,
        "mixed_precision": task.config.training.mixed_precision,
        "matmul_peak_gflops": peak, "matmul_shapes": shapes,
        "by_length": {str(t): c for t, c in compared.items()}, "faster_jit_compile": faster,
        "sentence_programs": per_length_programs(models),
    }
    counts = results["parameters"]
    print(f"{task.config.model}: {counts['total']:,} parameters, {counts['trainable']:,} "
          f"trained (embeddings {'trained' if config.trainable_embeddings else 'frozen'})")
    if FLAGS.program_size:
        results["program"] = training_program(models[faster], task, compared_lengths[0])
    if FLAGS.sweep:
        print(f"sweep with jit_compile={faster}")
        results["lengths"] = sweep(models[faster], task, lengths, peak, seconds, faster,
                                   compared)
        epoch = results["snli_epoch"] = snli_epoch(FLAGS.length_profile, results["lengths"],
                                                   task.config.data.batch_size)
        if "projected_seconds" in epoch:
            print(f"SNLI epoch ({SNLI_TRAIN_PAIRS:,} pairs) projected at "
                  f"{epoch['projected_seconds']:,.0f} s on {results['machine']['device']} "
                  f"({epoch['train_pairs_per_sec']:.0f} pairs/s; paper: 693 s on a GTX 1080Ti)")
    if FLAGS.bounded_epoch:
        epoch = results["bounded_epoch"] = bounded_epoch(
            build(task, True) if keras.backend.backend() != "torch" else models[faster],
            task, FLAGS.length_profile, seconds)
        if "projected_seconds" in epoch:
            print(f"SNLI epoch in bounded shapes ({epoch['shapes']} shapes, "
                  f"{epoch['padding_fraction']:.1%} padding; first steps "
                  f"{epoch['first_steps_seconds']:.0f} s): {epoch['projected_seconds']:,.0f} s "
                  f"({epoch['train_pairs_per_sec']:.0f} pairs/s)")
    return results


def training_program(model, task, length):
    """`program_size.measure` of the model's training program at `length`, printed."""
    # Traced or lowered only, never run: the model's weights stay as they are.
    program = program_size.measure(model, task.config.data.batch_size, length, VOCAB_SIZE,
                                   task.config.data.seed)
    print(f"training program at T={length}: " + ", ".join(
        f"{part} {value}" for part, value in program.items() if part in ("gradient", "step")))
    return program


def side_by_side(names, lengths):
    """Runs `benchmark` (without the sweep) on each backend of `names` in its own process;
    prints one table. Returns {backend: results}."""
    missing = [name for name in names if name not in backends.installed()]
    if missing:
        raise program.UsageError(f"--backends: {', '.join(missing)} not installed here "
                                 f"(installed: {', '.join(backends.installed())}).")
    own = project_flags.flagfile_lines(exclude=(
        "backends", "output", "benchmark_lengths", "sweep", "length_profile"))
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        flagfile = os.path.join(directory, rundir.FLAGFILE)
        with open(flagfile, "w", encoding="utf-8") as stream:
            stream.write("\n".join(own) + "\n")
        for name in names:
            output = os.path.join(directory, f"{name}.json")
            print(f"--- {name}", flush=True)
            subprocess.run([sys.executable, "-m", "benchmarks.benchmark", f"--flagfile={flagfile}",
                            "--nosweep", f"--benchmark_lengths={','.join(map(str, lengths))}",
                            f"--output={output}"], check=True,
                           env=dict(os.environ, KERAS_BACKEND=name))
            with open(output, encoding="utf-8") as stream:
                results[name] = json.load(stream)
    print(format_side_by_side(results))
    return results


def format_side_by_side(results):
    """The table of `side_by_side`, and which backend trains fastest (geometric mean of
    its best mode over the lengths)."""
    lines = ["backend (version)            T  jit    train pairs/s  roofline  "
             "inference pairs/s"]
    speed = {}
    for name, result in results.items():
        label = f"{name} ({result['machine']['backend_version']})"
        best = []
        for length, modes in result["by_length"].items():
            for mode, r in modes.items():
                lines.append(f"{label:<26} {length:>4}  {mode:<5}  {r['train_pairs_per_sec']:13.1f}"
                             f"  {r['roofline_fraction']:8.0%}  {r['infer_pairs_per_sec']:17.1f}")
            best.append(max(r["train_pairs_per_sec"] for r in modes.values()))
        speed[name] = math.exp(sum(map(math.log, best)) / len(best))
    fastest = max(speed, key=speed.get)
    lines.append(f"fastest to train here: {fastest} ("
                 + ", ".join(f"{name} {value:.0f}" for name, value in speed.items())
                 + " pairs/s, geometric mean over the lengths)")
    return "\n".join(lines)


@program.main(tensorflow=False)
def main(argv):
    program.check_start(argv)
    try:
        sweep_lengths = project_flags.lengths("sweep_lengths")
        compared = project_flags.lengths("benchmark_lengths")
    except ValueError as error:
        raise program.UsageError(str(error)) from None
    if FLAGS.backends:
        lengths = compared if FLAGS["benchmark_lengths"].present else [16, 32, 64]
        results = {"side_by_side": side_by_side(FLAGS.backends, lengths)}
    else:
        results = benchmark(_task(), compared, sweep_lengths)
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"results: {FLAGS.output}")


def frozen_embeddings(config):
    """`config` with an unset `trainable_embeddings` set to False: the random ids stand for
    the words of a run with GloVe, which the paper does not fine-tune (Im & Cho, 2017,
    Section 5.2). Unset, the library trains random vectors, and the program would time the
    gradient to the words and the update of a 20,000 x 300 embedding (6.0M of its 10.7M
    parameters) as the model's: 13% more a step at the paper's size.
    `--trainable_embeddings` times them."""
    if config.model_config.trainable_embeddings is not None:
        return config
    return config.replace(trainable_embeddings=False)


def _task():
    """The NLITask of the flags (embeddings frozen unless asked), with the precision
    policy set."""
    config = frozen_embeddings(project_flags.experiment_config())
    if config.training.mixed_precision != "none":
        keras.config.set_dtype_policy(config.training.mixed_precision)
    return NLITask(config, project_flags.run_policy())


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
