"""Speed, efficiency and memory of the model on this machine.

    python -m experiments.benchmark [--output=FILE.json] [--mixed_precision=mixed_bfloat16]
        [--benchmark_lengths=16,32] [--sweep_lengths=8,16,...,512] [--model=disan] [model flags]

For the model the flags describe (DSAN at the paper's size by default: d_e 300, 5 heads,
d_ff 1200; --model=disan or cbow for the baselines) at
--batch_size (64), with random token ids (no padding) in premise and hypothesis alike:

1. The dense-matmul peak of this machine, measured on matrices of the model's shapes.
2. Training and inference throughput (pairs/s) at --benchmark_lengths, with and without
   XLA (`jit_compile`), and the roofline fraction: achieved GFLOP/s (from an analytic FLOP
   count, `forward_flops`; training = 3x forward) over the matmul peak.
3. A sweep over --sweep_lengths: time per pair and peak memory of a training step, in the
   faster XLA setting of 2. Memory comes from TF's allocator where the device keeps
   statistics (GPUs, oneDNN CPUs), else from the process's peak resident memory; each figure
   names its source (`peak_memory_source`, see `Memory`).
4. The projected time of one SNLI epoch (549,367 pairs), from one timed epoch (after a
   warm-up epoch) on the length buckets of --train_data (default: the shared 1% SNLI
   sample, a random sample of SNLI train) when it exists.
"""

import json
import os
import platform
import statistics
import time

import keras
import numpy as np
import tensorflow as tf
from absl import flags

from dsan_tf.task import NLITask
from experiments import flags as project_flags
from experiments import program, rundir

FLAGS = project_flags.FLAGS
SNLI_TRAIN_PAIRS = 549_367
VOCAB_SIZE = 20_000  # the cost of a (frozen) embedding lookup does not depend on it


def define_flags():
    project_flags.define_model_flags()
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_output_flag()
    flags.DEFINE_string("shared_data", "../shared/data", "The shared data directory: its 1% "
                        "SNLI sample is the default --train_data of the epoch projection.")
    flags.DEFINE_float("benchmark_seconds", 2.0, "Time each measurement for at least this long.")
    flags.DEFINE_list("benchmark_lengths", ["16", "32"],
                      "Sentence lengths of the XLA on/off comparison.")
    flags.DEFINE_list("sweep_lengths", ["8", "16", "32", "64", "128", "256", "512"],
                      "Sentence lengths of the time and memory sweep.")
    flags.DEFINE_integer("train_steps", 20, "Timed training steps per comparison (after a "
                         "warm-up).")


def forward_flops(config, premise_length, hypothesis_length, model="dsan"):
    """Floating-point operations (a multiply-add is 2) of one pair's forward pass.

    Counts the matrix products. For DSAN they are all but a few percent of the work: per
    sentence of T tokens and per block, Q, K, V, W^O and the gate's W^S, W^H (6 of
    2·T·D²), QKᵀ and the weighted sum of V (2 of 2·T²·D over all heads), the FFN
    (2 of 2·T·D·F); source2token's two (2D x 2D) linears; the classifier. DiSAN per block:
    the token map, W1, W2 and the gate's two (5 of 2·T·D²) and the weighted sum (2·T²·D);
    its [T, T, D] tanh is elementwise work the count leaves out, so its roofline fraction
    understates how busy the machine is. CBOW: the classifier only.
    """
    d, f = config.embedding_dim, config.ffn_dim
    source2token = lambda t: 2 * 2 * t * (2 * d) ** 2  # noqa: E731

    if model == "dsan":
        width = {"multi_dim_max": 4, "multi_dim": 2, "max": 2}[config.pooling] * d

        def sentence(t):
            block = 6 * 2 * t * d * d + 2 * 2 * t * t * d + 2 * 2 * t * d * f
            return 2 * block + (source2token(t) if config.pooling != "max" else 0)
    elif model == "disan":
        width = 2 * d

        def sentence(t):
            return 2 * (5 * 2 * t * d * d + 2 * t * t * d) + source2token(t)
    elif model == "cbow":
        width, sentence = d, lambda t: 0
    else:
        raise ValueError(f"no FLOP count for model {model!r}.")

    classifier = 2 * 4 * width * config.classifier_units + 2 * config.classifier_units * 3
    return sentence(premise_length) + sentence(hypothesis_length) + classifier


def timed(step, min_seconds, min_calls=3):
    """Median seconds per call of `step` over at least min_calls calls and min_seconds,
    after two warm-up calls.

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
    """GFLOP/s of tf.matmul on the model's dense shapes; the best is the machine's peak."""
    d, f = config.embedding_dim, config.ffn_dim
    results = []
    for rows in sorted({batch_size * t for t in lengths}):
        for inner, outer in ((d, d), (d, f), (f, d), (2 * d, 2 * d)):
            a = tf.random.normal((rows, inner))
            b = tf.random.normal((inner, outer))
            seconds = timed(lambda: tf.linalg.matmul(a, b).numpy(),
                            min_seconds=seconds / 4)
            results.append({"shape": [rows, inner, outer],
                            "gflops": 2 * rows * inner * outer / seconds / 1e9})
    return max(r["gflops"] for r in results), results


def device_name():
    """The device TF runs the model on: the first GPU when there is one, else the CPU."""
    return "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"


def _vmhwm():
    """The process's peak resident set size in bytes (Linux VmHWM), or None."""
    try:
        with open("/proc/self/status") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class Memory:
    """Peak memory over a block, from the most exact source this machine offers.

    TF's allocator statistics where the device keeps them (GPUs; CPUs where TF's oneDNN
    path is on); elsewhere (e.g. an AMD CPU without AVX-512, where TF leaves oneDNN off
    and its CPU allocator keeps no statistics) the process's peak resident set size, reset
    before the block where Linux allows it. `source` names the one used: "tf_allocator:DEVICE",
    "process_peak_rss" (reset before the block), "process_peak_rss_since_start" (could not be
    reset: includes earlier work) or "unavailable" (then `peak_bytes` is None, never 0).
    `peak_rss_bytes` is the process figure whatever the source.
    """

    def __init__(self, device=None):
        self.device = device or device_name()

    def __enter__(self):
        try:
            tf.config.experimental.reset_memory_stats(self.device)
            self._allocator = True
        except (ValueError, RuntimeError, tf.errors.OpError):
            self._allocator = False  # this device's allocator keeps no statistics
        try:  # "5" resets the peak resident set size (proc(5))
            with open("/proc/self/clear_refs", "w") as stream:
                stream.write("5")
            self._rss_reset = True
        except OSError:
            self._rss_reset = False
        return self

    def __exit__(self, *exc):
        allocator_peak = None
        if self._allocator:
            try:
                allocator_peak = tf.config.experimental.get_memory_info(self.device)["peak"]
            except (ValueError, RuntimeError, tf.errors.OpError):
                pass
        self.peak_rss_bytes = _vmhwm()
        if allocator_peak:
            self.peak_bytes, self.source = allocator_peak, f"tf_allocator:{self.device}"
        elif self.peak_rss_bytes:
            self.peak_bytes = self.peak_rss_bytes
            self.source = ("process_peak_rss" if self._rss_reset
                           else "process_peak_rss_since_start")
        else:
            self.peak_bytes, self.source = None, "unavailable"


def gib(value):
    return "unknown" if value is None else f"{value / 2**30:.2f} GiB"


def build(task, jit_compile):
    """A compiled model of the task's configuration, seeded, for random token ids."""
    keras.utils.set_random_seed(task.config.data.seed)
    return task.compile(task.build_model(VOCAB_SIZE), jit_compile)


def random_batch(length, batch_size, seed):
    rng = np.random.default_rng(seed)
    ids = lambda: tf.constant(rng.integers(2, VOCAB_SIZE, (batch_size, length)), tf.int32)  # noqa: E731
    return {"premise": ids(), "hypothesis": ids()}, tf.constant(rng.integers(0, 3, batch_size))


def measure(model, task, length, peak, seconds, steps=3):
    """Throughput, roofline fraction and memory of training and inference at one length."""
    batch_size = task.config.data.batch_size
    inputs, labels = random_batch(length, batch_size, task.config.data.seed)
    train_step = lambda: model.train_on_batch(inputs, labels)  # noqa: E731 (returns numpy)
    infer_step = lambda: model.predict_on_batch(inputs)  # noqa: E731
    with Memory() as memory:
        train_seconds = timed(train_step, seconds, min_calls=steps)
    infer_seconds = timed(infer_step, seconds, min_calls=steps)
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


def snli_epoch(task, spec, jit_compile):
    """Training pairs/s over real SNLI batches (length buckets) -> seconds per SNLI epoch."""
    if ":" not in spec and not os.path.exists(spec):  # a missing default file: skip
        return {"skipped": f"{spec} does not exist"}
    examples, _ = task.read(spec, "train_data")
    preprocessor = task.build_preprocessor(examples)
    dataset = task.build_inputs(preprocessor.encode(examples), training=True,
                                static_shapes=True)
    model = task.compile(task.build_model(preprocessor.vocabulary_size), jit_compile)
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # warm-up: traces every shape
    started = time.perf_counter()
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    rate = (int(dataset.cardinality()) * task.config.data.batch_size
            / (time.perf_counter() - started))
    return {"source": spec, "train_pairs_per_sec": rate, "jit_compile": jit_compile,
            "projected_seconds": SNLI_TRAIN_PAIRS / rate, "paper_seconds_gtx_1080ti": 693}


def machine():
    """What the figures were measured on: CPU model and features, oneDNN setting, GPU."""
    cpu = {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}
    try:
        with open("/proc/cpuinfo") as stream:
            info = stream.read()
        cpu["cpu_model"] = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                                 if line.startswith("model name")), None)
        cpu["avx512"] = " avx512f" in info
    except OSError:
        pass
    cpu["tf_enable_onednn_opts"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(TF's default)")
    cpu["device"] = device_name()
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        cpu["gpu"] = details.get("device_name", gpus[0].name)
    return cpu


def compare_xla(models, task, lengths, peak, seconds, steps):
    """Training and inference at `lengths` with XLA off and on: ({length: {"false": ...,
    "true": ...}}, whether XLA was faster at most lengths)."""
    # A fresh process's first training steps run slower (thread pools, allocator, oneDNN's
    # primitive cache; measured: 68% of peak at T 16 first, 75% later), so warm it up once.
    measure(models[False], task, lengths[0], peak, seconds, steps=3)
    compared = {}
    for jit_compile, model in models.items():
        for length in lengths:
            r = measure(model, task, length, peak, seconds, steps=steps)
            compared.setdefault(length, {})[str(jit_compile).lower()] = r
            print(f"T={length:<4} jit_compile={jit_compile!s:<5} train "
                  f"{r['train_pairs_per_sec']:8.1f} pairs/s ({r['roofline_fraction']:.0%} of "
                  f"peak)  inference {r['infer_pairs_per_sec']:8.1f} pairs/s")
    faster = sum(c["true"]["train_pairs_per_sec"] > c["false"]["train_pairs_per_sec"]
                 for c in compared.values()) * 2 > len(compared)
    return compared, faster


def sweep(model, task, lengths, peak, seconds, jit_compile, compared):
    """Time per pair and peak memory of a training step at each length, until memory runs
    out: {str(length): result}."""
    per_length = {}
    for length in lengths:
        try:
            result = measure(model, task, length, peak, seconds,
                             steps=1 if length >= 256 else 3)
        except tf.errors.ResourceExhaustedError:  # e.g. DiSAN's [B, T, T, D] on a GPU
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


@program.main
def main(argv):
    program.check_start(argv)
    try:
        lengths = project_flags.lengths("sweep_lengths")
        compared_lengths = project_flags.lengths("benchmark_lengths")
    except ValueError as error:
        raise program.UsageError(str(error)) from None
    task = _task()
    lengths = sorted(set(lengths) | set(compared_lengths))
    config, seconds = task.config.model_config, FLAGS.benchmark_seconds
    peak, shapes = matmul_peak(config, lengths, task.config.data.batch_size, seconds)
    print(f"dense matmul peak on the model's shapes: {peak:.1f} GFLOP/s")
    # One model per XLA setting, reused by the sweep: building and tracing a model costs
    # more than the measurements of a small one.
    models = {jit_compile: build(task, jit_compile) for jit_compile in (False, True)}
    compared, faster = compare_xla(models, task, compared_lengths, peak, seconds,
                                   FLAGS.train_steps)
    print(f"sweep with jit_compile={faster}")
    per_length = sweep(models[faster], task, lengths, peak, seconds, faster, compared)
    spec = FLAGS.train_data or os.path.join(FLAGS.shared_data,
                                            "snli/snli_1.0_train_0.01.jsonl.gz")
    epoch = snli_epoch(task, spec, faster)
    if "projected_seconds" in epoch:
        print(f"SNLI epoch ({SNLI_TRAIN_PAIRS:,} pairs) projected at "
              f"{epoch['projected_seconds'] / 3600:.2f} h on this machine "
              f"({epoch['train_pairs_per_sec']:.0f} pairs/s; paper: 693 s on a GTX 1080Ti)")
    results = {
        "machine": machine(), "provenance": rundir.provenance(),
        "model": task.config.model, "config": config.to_dict(),
        "batch_size": task.config.data.batch_size,
        "mixed_precision": task.config.training.mixed_precision,
        "matmul_peak_gflops": peak, "matmul_shapes": shapes,
        "lengths": per_length, "snli_epoch": epoch,
    }
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"results: {FLAGS.output}")


def _task():
    """The NLITask of the flags, with the precision policy set."""
    config = project_flags.experiment_config()
    if config.training.mixed_precision != "none":
        keras.config.set_dtype_policy(config.training.mixed_precision)
    return NLITask(config)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
