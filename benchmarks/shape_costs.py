r"""What each batch shape costs on this device: XLA compile seconds and steady step time
(choose the shapes by compile plus step time, not by padding).

    KERAS_BACKEND=jax python -m benchmarks.shape_costs --config=dsan_snli \
        --shapes=16x16,32x16,48x32,64x64,96x64 --steps=400 --output=costs.jsonl
    python -m benchmarks.shape_costs --plan=records/runs/shape_costs_h200.jsonl

For each premise x hypothesis shape (random ids, no padding: the cost of a shape does not
depend on the words), a fresh model of the preset at its batch size: the first training
step (compilation included) and the first evaluation step, timed; then `fit` on a fixed
set of batches of that shape, --steps steps, timed on the second epoch (the first
compiles), with `steps_per_execution` 1 and each of --steps_per_execution. One JSON line
per measurement is appended to --output as it is made (a run cut short keeps what it
measured). Needs no TensorFlow on JAX.

--plan reads such a file and SNLI's length profile (records/runs/snli25k_lengths.json, scaled
to full SNLI's 549,367 pairs) and prints, for grids of one to three training shapes drawn
from a ladder of lengths, the padding left and the seconds of a 20-epoch schedule:
one compile per shape plus each epoch's steps, each at the step time a straight line
through the measured (premise + hypothesis length, ms per step) points gives
(`dsan_tf.data.costs.StepCosts.fit`, what training chooses its shapes by with
`--shape_costs=FILE`). It puts each pair in its own smallest shape (an ideal batching);
training pads each batch to its longest pair, so its padding is higher.
"""

import argparse
import json
import os
import sys
import time

import keras
import numpy as np

from dsan_tf.data.costs import StepCosts, as_run, scan_key
from dsan_tf.core.config import PRECISIONS, ExperimentConfig
from dsan_tf.core.task import NLITask
from benchmarks import device_profile
from benchmarks.benchmark import LENGTH_PROFILE, SNLI_TRAIN_PAIRS
from benchmarks.program_size import batches, training_model


def _conditions(task, premise, hypothesis, steps):
    """What a measurement ran: its shape and steps, the batch size, whether the encoder
    reads both sides in one pass (its step then reads 2 max(T1, T2) tokens a row), XLA's flags, Keras' dtype policy and (JAX) the
    default precision of matmuls (None: XLA's default)."""
    record = {"premise": premise, "hypothesis": hypothesis,
              "batch_size": task.config.data.batch_size, "one_pass": task.plan.one_pass,
              "xla_flags": os.environ.get("XLA_FLAGS", ""),
              "dtype_policy": keras.config.dtype_policy().name, "steps": steps}
    if keras.backend.backend() == "jax":  # float32 matmuls: XLA's default, TF32 or full
        import jax
        record["matmul_precision"] = jax.config.jax_default_matmul_precision
    return record


def _per_step(seconds, steps):
    """Seconds of `steps` steps as ms a step (keys ending in ms_per_step); others (first
    calls) as seconds."""
    return {key: round(1e3 * value / steps, 3) if key.endswith("ms_per_step")
            else round(value, 2) for key, value in seconds.items()}


def _append(path, record):
    """Appends `record` to the JSON lines in `path` and prints it."""
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


def synchronize():
    if keras.backend.backend() == "jax":
        import jax
        jax.effects_barrier()


def _timed_fit(model, *args, **kwargs):
    """Seconds of a second `fit` (the first compiles)."""
    model.fit(*args, epochs=1, verbose=0, shuffle=False, **kwargs)
    synchronize()
    started = time.perf_counter()
    model.fit(*args, epochs=1, verbose=0, shuffle=False, **kwargs)
    synchronize()
    return time.perf_counter() - started


class _Feed(keras.utils.PyDataset):
    """Prepared (inputs, labels, weights) batches, as `NLIBatches` yields them."""

    def __init__(self, batches, workers):
        super().__init__(workers=workers)
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        return self.batches[index]


def _weighted_batches(x, y, batch_size, steps):
    """`steps` (inputs, labels, weights of 1) batches, as `NLIBatches` yields them."""
    weights = np.ones(len(y), "float32")
    cut = lambda a, i: a[i * batch_size:(i + 1) * batch_size]  # noqa: E731
    return [({side: cut(ids, i) for side, ids in x.items()}, cut(y, i), cut(weights, i))
            for i in range(steps)]


def _feeds(model, x, y, batch_size, steps):
    """ms a training step by feeding path, the same program (sample weights, as
    `NLIBatches` gives them): NumPy arrays, a PyDataset (one worker, Keras' default) and
    a PyDataset of 4 prefetching threads."""
    result = {"weighted_arrays_ms_per_step": _timed_fit(
        model, x, y, sample_weight=np.ones(len(y), "float32"), batch_size=batch_size)}
    batches = _weighted_batches(x, y, batch_size, steps)
    for workers in (1, 4):
        result[f"pydataset_workers{workers}_ms_per_step"] = _timed_fit(
            model, _Feed(batches, workers))
    return {key: round(1e3 * seconds / steps, 3) for key, seconds in result.items()}


def _loops(model, x, y, batch_size, steps, chunk):
    """ms a training step by what drives the steps (JAX), the same model and batches:
    `fit` from a PyDataset with steps_per_execution 1 and `chunk` (`chunk` steps a call of
    the train function: fewer callbacks, and `dsan_tf.speed.multi_step`'s scan), then
    `_device_loops`."""
    steps = steps // chunk * chunk
    host = _weighted_batches(x, y, batch_size, steps)
    result = {"fit_ms_per_step": _timed_fit(model, _Feed(host, 1))}
    model.compile(optimizer=model.optimizer, loss=model.loss, jit_compile=True,
                  steps_per_execution=chunk)
    result[f"fit_steps_per_execution{chunk}_ms_per_step"] = _timed_fit(model, _Feed(host, 1))
    result.update(_device_loops(model, host, chunk))
    return _per_step(result, steps)


def _device_loops(model, host, chunk, bare_loop=True, profile=None):
    """Seconds of the compiled step called in a bare Python loop on batches already on
    the device (no `fit`, no feeding: dispatch and device), and of `chunk` steps in one
    program (`lax.scan`): the device's own time; and each one's first call (the scan's
    compile). `profile`: a folder for a profiler trace of the scan's first 2 calls, its
    summary (`benchmarks.device_profile`) and the compiled program's HLO text."""
    import jax
    import jax.numpy as jnp

    def state():  # copies: the programs below donate their state
        return jax.tree.map(jnp.copy, (
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            [v.value for v in model.optimizer.variables],
            [v.value for v in model.metrics_variables]))

    def scanned(carried, stacked):
        def body(carried, batch):
            logs, carried = model.train_step(carried, batch)
            return carried, logs
        carried, logs = jax.lax.scan(body, carried, stacked)
        return logs, carried

    stacked = [jax.device_put(jax.tree.map(lambda *a: np.stack(a), *host[i:i + chunk]))
               for i in range(0, len(host), chunk)]
    result = {}
    loops = [(f"scan{chunk}", jax.jit(scanned, donate_argnums=0), stacked)]
    if bare_loop:
        loops.insert(0, ("jit_loop", jax.jit(model.train_step, donate_argnums=0),
                         jax.device_put(host)))
    for name, function, inputs in loops:
        carried = state()
        started = time.perf_counter()
        _, carried = function(carried, inputs[0])  # compiles
        jax.block_until_ready(carried)
        result[f"{name}_first_call_s"] = time.perf_counter() - started
        for _ in range(2):  # the second pass is timed
            started = time.perf_counter()
            for batch in inputs:
                _, carried = function(carried, batch)
            jax.block_until_ready(carried)
        result[f"{name}_ms_per_step"] = time.perf_counter() - started
    if profile:
        result["profile"] = _profile_scan(loops[-1][1], carried, stacked, chunk, profile)
    return result


def _profile_scan(scan, carried, stacked, chunk, folder):
    """A profiler trace of the compiled `scan`'s first 2 calls, its summary
    (`benchmarks.device_profile`, kernels.json) and the program's HLO text
    (scan_hlo.txt), in `folder`; returns the summary without its top instructions."""
    calls = min(2, len(stacked))
    path = device_profile.trace(scan, (carried, stacked[0]), calls, folder)
    summary = device_profile.summarize(path, calls * chunk)
    device_profile.write(summary, folder)
    compiled = scan.lower(carried, stacked[0]).compile()  # the cached executable
    with open(os.path.join(folder, "scan_hlo.txt"), "w", encoding="utf-8") as stream:
        stream.write(compiled.as_text())
    return {key: value for key, value in summary.items() if key != "top"}


def measure(task, premise, hypothesis, steps, steps_per_execution, compare_feeds=False,
            compare_loops=0):
    """{compile_train_s, compile_eval_s, ms_per_step} of one shape and one
    steps_per_execution, on a fresh model; `compare_feeds`: and by feeding path
    (`_feeds`); `compare_loops` (a chunk of steps, JAX): and by what drives the steps
    (`_loops`)."""
    batch_size = task.config.data.batch_size
    model = training_model(task)
    if steps_per_execution > 1:
        model.compile(optimizer=model.optimizer, loss=model.loss, jit_compile=True,
                      steps_per_execution=steps_per_execution)
    x, y = batches(batch_size, premise, hypothesis, steps)
    one = ({k: v[:batch_size] for k, v in x.items()}, y[:batch_size])
    started = time.perf_counter()
    model.train_on_batch(*one)
    compile_train = time.perf_counter() - started
    started = time.perf_counter()
    model.test_on_batch(*one)
    compile_eval = time.perf_counter() - started
    model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, shuffle=False)  # compiles fit
    synchronize()
    started = time.perf_counter()
    model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, shuffle=False)
    synchronize()
    seconds = time.perf_counter() - started
    model.evaluate(x, y, batch_size=batch_size, verbose=0)
    synchronize()
    started = time.perf_counter()
    model.evaluate(x, y, batch_size=batch_size, verbose=0)
    synchronize()
    eval_seconds = time.perf_counter() - started
    feeds = _feeds(model, x, y, batch_size, steps) if compare_feeds else {}
    if compare_loops:
        feeds.update(_loops(model, x, y, batch_size, steps, compare_loops))
    return {**feeds, **_conditions(task, premise, hypothesis, steps),
            "steps_per_execution": steps_per_execution,
            "first_train_step_s": round(compile_train, 2),
            "first_eval_step_s": round(compile_eval, 2),
            "train_ms_per_step": round(1e3 * seconds / steps, 3),
            "train_pairs_per_s": round(batch_size * steps / seconds),
            "eval_ms_per_step": round(1e3 * eval_seconds / steps, 3)}


def scan_cost(task, premise, hypothesis, steps, chunk, profile=None):
    """ms a training step of `chunk` steps in one program (`lax.scan`, JAX), batches on
    the device, and the scan's first call: the cheapest A/B of a change to the step on a
    GPU (one XLA compile). `profile`: a folder for the scan's trace (`_device_loops`)."""
    batch_size = task.config.data.batch_size
    model = training_model(task)
    x, y = batches(batch_size, premise, hypothesis, steps)
    # Builds the optimizer's and the metrics' variables symbolically (as `fit` does
    # first): no step runs, so the scan is the only program compiled.
    model._symbolic_build(data_batch=({k: v[:batch_size] for k, v in x.items()},
                                      y[:batch_size]))
    steps = steps // chunk * chunk
    seconds = _device_loops(model, _weighted_batches(x, y, batch_size, steps), chunk,
                            bare_loop=False, profile=profile)
    profiled = seconds.pop("profile", None)
    return {**_per_step(seconds, steps), **_conditions(task, premise, hypothesis, steps),
            **({"profile": profiled} if profiled else {})}


def _epoch(grid, cells, batch, step_ms):
    """(padding, steps, seconds) of an epoch whose pairs each go to the smallest shape of
    `grid` that holds them; `cells` are (premise length, hypothesis length, pairs)."""
    steps = seconds = padded = real = 0.0
    for p, h, n in cells:
        gp, gh = min(((gp, gh) for gp, gh in grid if gp >= p and gh >= h),
                     key=lambda shape: shape[0] + shape[1])
        steps += n / batch
        seconds += n / batch * step_ms(gp + gh) / 1e3
        padded += n * (gp + gh)
        real += n * (p + h)
    return 1 - real / padded, steps, seconds


def plan(costs_path, profile_path, epochs=20, shapes_at_most=3, top=2):
    """The grids of at most `shapes_at_most` training shapes with the least compile plus
    training seconds over `epochs` epochs: [(seconds, grid, padding, steps per epoch)]."""
    import itertools

    fitted = StepCosts.read(costs_path)  # the line the library chooses shapes by
    slope, intercept, batch = fitted.step_ms_per_token, fitted.step_ms, fitted.batch_size
    compile_s = fitted.compile_seconds
    profile = json.load(open(profile_path, encoding="utf-8"))
    scale = SNLI_TRAIN_PAIRS / profile["pairs"]
    cells = [(p, h, n * scale) for p, h, n in profile["cells"]]
    longest = (max(p for p, _, _ in cells), max(h for _, h, _ in cells))
    # Candidate lengths: a coarse ladder of the profile's bounds (the grids' search is
    # combinatorial), and the longest sentence of each side.
    ladder = (8, 12, 16, 20, 24, 32, 48, 64)
    premises = [b for b in ladder if b < longest[0]] + [longest[0]]
    hypotheses = [b for b in ladder if b < longest[1]] + [longest[1]]
    candidates = [(p, h) for p in premises for h in hypotheses]
    step_ms = lambda tokens: intercept + slope * tokens  # noqa: E731
    results = []
    for size in range(1, shapes_at_most + 1):
        for grid in itertools.combinations(candidates, size):
            if any(p >= longest[0] and h >= longest[1] for p, h in grid):  # all pairs fit
                padding, steps, seconds = _epoch(grid, cells, batch, step_ms)
                results.append((size * compile_s + epochs * seconds, grid, padding, steps,
                                seconds))
    results.sort()
    print(f"step ms = {intercept:.3f} + {slope:.4f} x (premise + hypothesis tokens); "
          f"compile {compile_s:.1f} s a shape (training and evaluation step); {epochs} epochs of "
          f"{SNLI_TRAIN_PAIRS:,} pairs at batch {batch}")
    for size in range(1, shapes_at_most + 1):
        best = [r for r in results if len(r[1]) == size][:top]
        for total, grid, padding, steps, seconds in best:
            print(f"{size} shape(s) {' '.join(f'{p}x{h}' for p, h in grid):32s} padding "
                  f"{padding:5.1%}  epoch {seconds:5.1f} s  compile {size * compile_s:5.0f} s"
                  f"  {epochs} epochs {total:6.0f} s")
    return results


def faster(path, policy):
    """Whether the scans in `path` (`--scan_only` records) ran faster under the dtype
    `policy` than every float32 run of the same shape, all else the default (weights
    stacked, Keras' Adam, XLA's flags and matmul precision); prints the two."""
    times = {}
    with open(path, encoding="utf-8") as stream:
        for record in map(json.loads, stream):
            key = scan_key(record)
            if key and as_run(record):
                shape = (record.get("premise"), record.get("hypothesis"))
                times.setdefault(shape, {}).setdefault(
                    record.get("dtype_policy", "float32"), []).append(
                        record[f"{key}_ms_per_step"])
    shape = next((shape for shape, runs in times.items()
                  if runs.get(policy) and runs.get("float32")), None)
    if shape is None:
        print(f"{path}: no scans of one shape in both float32 and {policy}")
        return False
    runs = times[shape]
    print(f"ms a step at {shape[0]}x{shape[1]}: {policy} {min(runs[policy])}, float32 "
          f"{runs['float32']}")
    return min(runs[policy]) < min(runs["float32"])


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="dsan_snli", help="a named configuration")
    parser.add_argument("--shapes", default="16x16,32x16,48x32,64x64",
                        help="premise x hypothesis lengths, comma-separated")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--steps_per_execution", default="16",
                        help="values besides 1 to time (comma-separated; empty: none)")
    parser.add_argument("--size", default="", help="model fields over the preset, e.g. "
                        "embedding_dim=16,num_heads=2,ffn_dim=32 (a quick check)")
    parser.add_argument("--output", help="Append the measurements here (JSON lines).")
    parser.add_argument("--compare_feeds", action="store_true", help="also time the first "
                        "shape's step fed from arrays and from PyDatasets (one program)")
    parser.add_argument("--scan_only", type=int, default=0, metavar="N",
                        help="JAX: time only N steps as one program (lax.scan) at the "
                        "first shape, one compile: the quick A/B on a GPU")
    parser.add_argument("--profile", metavar="DIR", help="with --scan_only: a profiler "
                        "trace of the scan, kernels.json (device time by HLO instruction, "
                        "benchmarks.device_profile) and the program's HLO text in DIR")
    parser.add_argument("--compare_loops", type=int, default=0, metavar="N",
                        help="JAX: also time the first shape's step driven by fit, fit with "
                        "steps_per_execution N, a bare loop of the compiled step on the "
                        "device's batches, and N steps in one program (lax.scan)")
    parser.add_argument("--mixed_precision", default="none", choices=PRECISIONS,
                        help="the measured models' precision (the training program's flag; "
                        "records name Keras' dtype policy)")
    parser.add_argument("--faster", metavar="FILE", help="exit 0 where FILE's scans in "
                        "--mixed_precision beat every float32 scan in it, else 1")
    parser.add_argument("--plan", help="Plan grids from this file of measurements instead.")
    parser.add_argument("--length_profile", default=str(LENGTH_PROFILE))
    return parser


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.plan:
        plan(args.plan, args.length_profile)
        return 0
    policy = "float32" if args.mixed_precision == "none" else args.mixed_precision
    if args.faster:
        return 0 if faster(args.faster, policy) else 1
    if not args.output:
        parser.error("give --output (or --plan)")
    fields = dict(item.split("=") for item in args.size.split(",") if item)
    fields = {k: int(v) for k, v in fields.items()}
    keras.config.set_dtype_policy(policy)
    task = NLITask(ExperimentConfig.named(args.config, **fields), log=lambda *a: None)
    device = keras.backend.backend()
    if device == "jax":
        import jax
        device += ": " + ", ".join(d.device_kind for d in jax.devices())
    header = {"device": device, "keras": keras.__version__, "preset": args.config,
              "fields": fields, "embedding_dim": task.config.model_config.embedding_dim}
    _append(args.output, header)
    extra = [int(v) for v in args.steps_per_execution.split(",") if v]
    if args.scan_only:
        premise, hypothesis = map(int, args.shapes.split(",")[0].split("x"))
        _append(args.output, scan_cost(task, premise, hypothesis, args.steps,
                                       args.scan_only, args.profile))
    else:
        _measure_shapes(task, args, extra)
    return 0


def _measure_shapes(task, args, extra):
    for number, shape in enumerate(args.shapes.split(",")):
        premise, hypothesis = map(int, shape.split("x"))
        for spe in [1, *extra] if number == 0 else [1]:  # steps_per_execution: first shape
            result = measure(task, premise, hypothesis, args.steps, spe,
                             args.compare_feeds and number == 0 and spe == 1,
                             args.compare_loops if number == 0 and spe == 1 else 0)
            _append(args.output, result)


if __name__ == "__main__":
    sys.exit(main())
