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

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS
SNLI_TRAIN_PAIRS = 549_367
VOCAB_SIZE = 20_000  # the cost of a (frozen) embedding lookup does not depend on it


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


def timed(step, min_seconds=None, min_calls=3):
    """Median seconds per call of `step` over at least min_calls calls and min_seconds
    (default --benchmark_seconds), after two warm-up calls.

    The median, not the mean: on a shared 2-core machine a few calls are slowed by other
    processes, and the first calls after tracing still fill oneDNN's primitive cache.
    """
    min_seconds = FLAGS.benchmark_seconds if min_seconds is None else min_seconds
    step()
    step()
    durations, started = [], time.perf_counter()
    while len(durations) < min_calls or time.perf_counter() - started < min_seconds:
        before = time.perf_counter()
        step()
        durations.append(time.perf_counter() - before)
    return statistics.median(durations)


def matmul_peak(config, lengths, batch_size):
    """GFLOP/s of tf.matmul on the model's dense shapes; the best is the machine's peak."""
    import tensorflow as tf

    d, f = config.embedding_dim, config.ffn_dim
    results = []
    for rows in sorted({batch_size * t for t in lengths}):
        for inner, outer in ((d, d), (d, f), (f, d), (2 * d, 2 * d)):
            a = tf.random.normal((rows, inner))
            b = tf.random.normal((inner, outer))
            seconds = timed(lambda: tf.linalg.matmul(a, b).numpy(),
                            min_seconds=FLAGS.benchmark_seconds / 4)
            results.append({"shape": [rows, inner, outer],
                            "gflops": 2 * rows * inner * outer / seconds / 1e9})
    return max(r["gflops"] for r in results), results


def device_name():
    """The device TF runs the model on: the first GPU when there is one, else the CPU."""
    import tensorflow as tf

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
        import tensorflow as tf

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
        import tensorflow as tf

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


def build(config, jit_compile):
    import keras

    from dsan_tf import build_model, compile_for_training

    keras.utils.set_random_seed(FLAGS.seed)
    return compile_for_training(build_model(FLAGS.model, config), FLAGS.learning_rate,
                                jit_compile)


def random_batch(length, batch_size):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(FLAGS.seed)
    ids = lambda: tf.constant(rng.integers(2, VOCAB_SIZE, (batch_size, length)), tf.int32)  # noqa: E731
    return {"premise": ids(), "hypothesis": ids()}, tf.constant(rng.integers(0, 3, batch_size))


def measure(model, config, length, peak, batch_size, steps=None):
    """Throughput, roofline fraction and memory of training and inference at one length."""
    inputs, labels = random_batch(length, batch_size)
    train_step = lambda: model.train_on_batch(inputs, labels)  # noqa: E731 (returns numpy)
    infer_step = lambda: model.predict_on_batch(inputs)  # noqa: E731
    with Memory() as memory:
        train_seconds = timed(train_step, min_calls=steps or 3)
    infer_seconds = timed(infer_step, min_calls=steps or 3)
    flops = forward_flops(config, length, length, FLAGS.model) * batch_size
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


def snli_epoch(config, jit_compile):
    """Training pairs/s over real SNLI batches (length buckets) -> seconds per SNLI epoch."""
    from dsan_tf import data

    spec = FLAGS.train_data or os.path.join(FLAGS.shared_data, "snli/snli_1.0_train_0.01.jsonl.gz")
    if ":" not in spec and not os.path.exists(spec):  # a missing default file: skip
        return {"skipped": f"{spec} does not exist"}
    examples, _ = data.read_examples(spec)
    vocab = data.Vocabulary.from_examples(examples, lowercase=FLAGS.lowercase)
    pairs = data.encode(examples, vocab, FLAGS.max_length or None)
    dataset = data.make_dataset(pairs, FLAGS.batch_size, shuffle=True, seed=FLAGS.seed,
                                pad_to_bucket=jit_compile, drop_remainder=True)
    config = project_flags.model_config(vocab_size=vocab.size)
    model = build(config, jit_compile)
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # warm-up: traces every shape
    started = time.perf_counter()
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    rate = int(dataset.cardinality()) * FLAGS.batch_size / (time.perf_counter() - started)
    return {"source": spec, "train_pairs_per_sec": rate, "jit_compile": jit_compile,
            "projected_seconds": SNLI_TRAIN_PAIRS / rate, "paper_seconds_gtx_1080ti": 693}


def machine():
    """What the figures were measured on: CPU model and features, oneDNN setting, GPU."""
    import tensorflow as tf

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


def main(argv):
    run.start(argv)
    import keras
    import tensorflow as tf

    if FLAGS.mixed_precision != "none":
        keras.config.set_dtype_policy(FLAGS.mixed_precision)
    config = project_flags.model_config(vocab_size=VOCAB_SIZE)
    batch_size = FLAGS.batch_size
    try:
        lengths = project_flags.lengths("sweep_lengths")
        compared_lengths = project_flags.lengths("benchmark_lengths")
    except project_flags.flags.ValidationError as error:
        run.fail(str(error))
    lengths = sorted(set(lengths) | set(compared_lengths))
    peak, shapes = matmul_peak(config, lengths, batch_size)
    print(f"dense matmul peak on the model's shapes: {peak:.1f} GFLOP/s")

    # A fresh process's first training steps run slower (thread pools, allocator, oneDNN's
    # primitive cache; measured: 68% of peak at T 16 first, 75% later), so warm it up once.
    # One model per XLA setting, reused by the sweep: building and tracing a model costs
    # more than the measurements of a small one.
    models = {jit_compile: build(config, jit_compile) for jit_compile in (False, True)}
    measure(models[False], config, compared_lengths[0], peak, batch_size, steps=3)
    compared = {}
    for jit_compile, model in models.items():
        for length in compared_lengths:
            r = measure(model, config, length, peak, batch_size, steps=FLAGS.train_steps)
            compared.setdefault(length, {})[str(jit_compile).lower()] = r
            print(f"T={length:<4} jit_compile={jit_compile!s:<5} train "
                  f"{r['train_pairs_per_sec']:8.1f} pairs/s ({r['roofline_fraction']:.0%} of "
                  f"peak)  inference {r['infer_pairs_per_sec']:8.1f} pairs/s")
    faster = sum(c["true"]["train_pairs_per_sec"] > c["false"]["train_pairs_per_sec"]
                 for c in compared.values()) * 2 > len(compared)
    print(f"sweep with jit_compile={faster}")

    per_length = {}
    model = models[faster]
    for length in lengths:
        try:
            result = measure(model, config, length, peak, batch_size,
                             steps=1 if length >= 256 else 3)
        except tf.errors.ResourceExhaustedError:  # e.g. DiSAN's [B, T, T, D] on a GPU
            per_length[str(length)] = {"error": "out of memory"}
            print(f"T={length:<4} out of memory; longer lengths skipped")
            break
        result["jit_compile"] = faster
        if length in compared:
            result["by_jit_compile"] = compared[length]
        per_length[str(length)] = result
        print(f"T={length:<4} train {result['train_ms_per_pair']:8.2f} ms/pair "
              f"({result['roofline_fraction']:.0%})  inference {result['infer_pairs_per_sec']:8.1f}"
              f" pairs/s  peak memory {gib(result['peak_memory_bytes'])} "
              f"({result['peak_memory_source']}; process {gib(result['peak_rss_bytes'])})")

    epoch = snli_epoch(config, faster)
    if "projected_seconds" in epoch:
        print(f"SNLI epoch ({SNLI_TRAIN_PAIRS:,} pairs) projected at "
              f"{epoch['projected_seconds'] / 3600:.2f} h on this machine "
              f"({epoch['train_pairs_per_sec']:.0f} pairs/s; paper: 693 s on a GTX 1080Ti)")
    results = {
        "machine": machine(),
        "provenance": run.provenance(),
        "model": FLAGS.model, "config": config.to_dict(), "batch_size": batch_size,
        "mixed_precision": FLAGS.mixed_precision,
        "matmul_peak_gflops": peak, "matmul_shapes": shapes,
        "lengths": per_length, "snli_epoch": epoch,
    }
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"results: {FLAGS.output}")


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
