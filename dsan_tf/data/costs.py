"""What batch shapes cost on a device, and the shapes that cost least over a run.

A compiled step (JAX, or `jit_compile`) is compiled once per batch shape. On a GPU at
batch 64 a compile takes about 25 s (training and evaluation step) and a step about 2 ms
whatever its length, so the padding that many shapes save buys little; on a 2-core CPU a
compile takes about 9 s and a step grows with its tokens. `StepCosts` is a straight line
fitted to measured shapes (`benchmarks.shape_costs`): seconds to compile a shape, and
milliseconds a training step of (premise + hypothesis) tokens. `choose_cells` picks the
one to `most` shapes that cost least over a run: one compile each plus every step of the
schedule, each batch in the cheapest shape that holds it.

Shape legend: U distinct (premise, hypothesis) longest-sentence pairs of a pass's batches,
K candidate shapes.
"""

import dataclasses
import itertools
import json

import numpy as np


@dataclasses.dataclass(frozen=True)
class StepCosts:
    """A device's cost of a batch shape (premise length T1, hypothesis length T2).

    Attributes:
        compile_seconds: compiling one shape's training and evaluation steps.
        step_ms: a training step's fixed milliseconds (launches, host work).
        step_ms_per_token: and per token of T1 + T2, at `batch_size` rows.
        batch_size: the rows the step times were measured at (the token part scales).
        embedding_dim: the measured model's d_e, or None. Where given, the token part
            scales with a model's d_e squared (arithmetic-bound devices: the projections
            and the FFN of every token are d_e x d_e matrices).
        source: where the figures come from, in words.
    """

    compile_seconds: float
    step_ms: float
    step_ms_per_token: float
    batch_size: int = 64
    embedding_dim: int | None = None
    source: str = ""

    def step_seconds(self, premise, hypothesis, batch_size=None, embedding_dim=None,
                     one_pass=False):
        """Seconds of a training step of shape (batch_size, T1, T2); arrays broadcast.
        `one_pass`: the encoder reads both sides as one batch of 2B padded to the longer
        (`NLIClassifier`'s `one_pass`), so the step's tokens are 2 max(T1, T2)."""
        per_token = self.step_ms_per_token * (batch_size or self.batch_size) / self.batch_size
        if self.embedding_dim and embedding_dim:
            per_token *= (embedding_dim / self.embedding_dim) ** 2
        premise, hypothesis = np.asarray(premise), np.asarray(hypothesis)
        tokens = 2 * np.maximum(premise, hypothesis) if one_pass else premise + hypothesis
        return (self.step_ms + per_token * tokens) / 1e3

    @classmethod
    def fit(cls, rows, source=""):
        """From `benchmarks.shape_costs` lines (dicts; its header line gives the model's
        `embedding_dim`, kept where the device is a CPU): the mean compile of a shape and
        a least-squares line through (tokens, training ms a step), its fixed part kept
        >= 0; the tokens are T1 + T2, or 2 max(T1, T2) where a line says `one_pass`.
        Without lines of `steps_per_execution` 1, the lines of `--scan_only` (the step
        of a K-step program, the training program's compile alone). Lines of A/Bs
        (`as_run` false: another layout, XLA's flags, a matmul precision) are left out,
        and of several dtype policies the float32 lines are kept."""
        header = next((row for row in rows if "device" in row), {})
        rows = [row for row in rows if as_run(row)]
        measured = [row for row in rows if row.get("steps_per_execution") == 1]
        if not measured:  # `--scan_only` lines: K steps as one program, as a GPU trains
            measured = [_from_scan(row) for row in rows if scan_key(row)]
        policies = {row.get("dtype_policy", "float32") for row in measured}
        if len(policies) > 1:  # A/Bs of precision beside: the float32 lines
            measured = [row for row in measured
                        if row.get("dtype_policy", "float32") == "float32"]
        rows = measured
        if not rows:
            raise ValueError("no measurements of steps_per_execution 1, nor scans, to fit")
        # The tokens the encoder read: both sides at the longer one's length where the
        # measured model ran one pass (records say so since 2026-11-28), else T1 + T2.
        tokens = np.array([2 * max(row["premise"], row["hypothesis"]) if row.get("one_pass")
                           else row["premise"] + row["hypothesis"] for row in rows], float)
        times = np.array([row["train_ms_per_step"] for row in rows], float)
        slope, intercept = np.polyfit(tokens, times, 1) if len(set(tokens)) > 1 else (
            times.mean() / tokens.mean(), 0.0)
        if intercept < 0:  # a line through the origin: a step is never free
            slope, intercept = float(tokens @ times / (tokens @ tokens)), 0.0
        compile_seconds = float(np.mean([row["first_train_step_s"] + row["first_eval_step_s"]
                                         for row in rows]))
        return cls(round(compile_seconds, 2), round(float(intercept), 4),
                   round(float(slope), 5), int(rows[0]["batch_size"]),
                   header.get("fields", {}).get("embedding_dim", header.get("embedding_dim"))
                   if "cpu" in header.get("device", "") else None,
                   source or header.get("device", ""))

    @classmethod
    def read(cls, path):
        """`fit` to the measurements in a JSON-lines file."""
        with open(path, encoding="utf-8") as stream:
            rows = [json.loads(line) for line in stream if line.strip()]
        return cls.fit(rows, f"{path}")

    def to_dict(self):
        return dataclasses.asdict(self)


# Measured with `benchmarks.shape_costs` (docs/PERFORMANCE.md, "Shapes chosen by what they cost"):
# an NVIDIA H200, the paper configuration (2026-11-26, records/runs/shape_costs_h200.jsonl):
# the step is bound by overhead, so it does not scale with the model's size.
GPU = StepCosts(25.63, 2.0349, 0.0153, 64, None, "NVIDIA H200, dsan_snli, JAX 0.11.2")
# A 2-core Xeon (AVX-512), JAX 0.10.2, the study's size (d_e 50, h 5, d_ff 200;
# records/runs/shape_costs_cpu.jsonl): the step is arithmetic, so it scales with d_e.
CPU = StepCosts(9.8, 0.0, 1.72593, 64, 50, "2-core Xeon, d_e 50, JAX 0.10.2")


def as_run(row):
    """Whether an `benchmarks.shape_costs` line measured the model as training runs it:
    the encoder's weights stacked, Keras' Adam, no XLA flags and XLA's own precision of
    matmuls (lines from before those were recorded count as such)."""
    return not (row.get("packed_weights") or row.get("flat_moments") or row.get("xla_flags")
                or row.get("matmul_precision"))


def scan_key(row):
    """The "scanK" prefix of a `--scan_only` line's keys, or None."""
    return next((key[:-len("_ms_per_step")] for key in row
                 if key.startswith("scan") and key.endswith("_ms_per_step")), None)


def _from_scan(row):
    """A `--scan_only` line as a `fit` row: its step time, its first call as the compile
    (the training program's; the evaluation step's few seconds are not measured)."""
    key = scan_key(row)
    return {**row, "train_ms_per_step": row[f"{key}_ms_per_step"],
            "first_train_step_s": row[f"{key}_first_call_s"], "first_eval_step_s": 0.0}


# What a shape more must save to be chosen (`choose_cells`): 2% of the run's seconds.
MARGIN = 0.02


def device_costs(platform):
    """The built-in `StepCosts` of a device platform (`device_platform`): the GPU's for an
    accelerator, else the CPU's (measured on JAX; TensorFlow's XLA compiles alike)."""
    return CPU if platform == "cpu" else GPU


def step_costs(setting):
    """`RunPolicy.shape_costs` as `StepCosts`: "device" the built-in figures of the device
    the backend computes on, a path those fitted to its measurements; "padding" None."""
    if setting == "padding":
        return None
    if setting in (None, "", "device"):
        return device_costs(device_platform())
    return StepCosts.read(setting)


def batch_maxima(lengths, batches):
    """int [batches]: each batch's longest sentence (at least 1)."""
    if not batches:
        return np.zeros(0, "int64")
    starts = np.cumsum([0, *(len(batch) for batch in batches[:-1])])
    return np.maximum(np.maximum.reduceat(lengths[np.concatenate(batches)], starts), 1)


def _candidates(maxima, counts, how_many, longest):
    """Up to `how_many` lengths at the weighted quantiles of `maxima`, and `longest`."""
    order = np.argsort(maxima)
    cumulative = np.cumsum(counts[order]) / counts.sum()
    picks = {int(maxima[order][np.searchsorted(cumulative, q)])
             for q in np.linspace(0.1, 0.9, how_many - 1)}
    return sorted({min(p, longest) for p in picks} | {longest})


def run_seconds(cells, maxima, counts, costs, steps_scale, batch_size, embedding_dim,
                one_pass=False):
    """(seconds, used cells, padded tokens a pass) of batches with longest sentences
    `maxima` (int [U, 2], `counts` [U] batches each) in the cheapest of `cells` that holds
    each: one compile per cell used, `steps_scale` passes of steps (`one_pass`: as
    `StepCosts.step_seconds`; the tokens are then those the encoder reads)."""
    cells = np.asarray(cells)
    fits = (cells[:, None, 0] >= maxima[None, :, 0]) & (cells[:, None, 1] >= maxima[None, :, 1])
    step = costs.step_seconds(cells[:, 0], cells[:, 1], batch_size, embedding_dim, one_pass)
    per = np.where(fits, step[:, None], np.inf)
    choice = per.argmin(0)
    used = sorted({tuple(int(v) for v in cells[c]) for c in choice})
    seconds = len(used) * costs.compile_seconds + steps_scale * float(
        (per.min(0) * counts).sum())
    read = 2 * cells.max(1) if one_pass else cells.sum(1)
    tokens = float((read[choice] * counts).sum())
    return seconds, used, tokens


def choose_cells(maxima, counts, costs, steps_scale, batch_size, embedding_dim=None, most=3,
                 lengths=8, one_pass=False, margin=MARGIN):
    """The set of 1 to `most` shapes (T1, T2) with the least compile plus step seconds over
    a run, the largest (longest premise, longest hypothesis) always among them. A set of
    more shapes is taken only where it is predicted faster by more than `margin` (a
    fraction) than the best of fewer: the costs are a straight line through a few
    measurements, and each shape more is a compile before the first step.

    With `one_pass` a shape costs what its longer side costs (`StepCosts.step_seconds`),
    so the shapes are squares (L, L): L from the quantiles of the batches' longer
    sentences, the largest the longest sentence of either side.

    Args:
        maxima: int [U, 2] distinct longest (premise, hypothesis) of a pass's batches.
        counts: int [U] batches of each.
        costs: `StepCosts`.
        steps_scale: passes' worth of steps in the run (epochs x steps an epoch / a pass).
        batch_size, embedding_dim: the run's (`StepCosts.step_seconds`).
        most: at most this many shapes.
        lengths: candidate lengths per side.
        one_pass: the encoder reads both sides as one batch (`StepCosts.step_seconds`).
        margin: what a shape more must save, as a fraction of the run's seconds.

    Returns:
        `run_seconds` of the chosen set: (seconds, the shapes a pass uses (sorted),
        padded tokens a pass).
    """
    maxima, counts = np.asarray(maxima), np.asarray(counts, float)
    if one_pass:
        longest = int(maxima.max())
        top = (longest, longest)
        candidates = [(n, n) for n in _candidates(maxima.max(1), counts, lengths, longest)
                      if n != longest]
    else:
        top = (int(maxima[:, 0].max()), int(maxima[:, 1].max()))
        candidates = [(p, h) for p in _candidates(maxima[:, 0], counts, lengths, top[0])
                      for h in _candidates(maxima[:, 1], counts, lengths, top[1])
                      if (p, h) != top]
    best = None
    for size in range(most):
        bound = np.inf if best is None else best[0] * (1 - margin)
        for others in itertools.combinations(candidates, size):
            run = run_seconds([*others, top], maxima, counts, costs, steps_scale,
                              batch_size, embedding_dim, one_pass)
            if run[0] < bound - 1e-9:
                best, bound = run, run[0]
    return best


def device_platform():
    """The platform the Keras backend computes on: "cpu", "gpu" or "tpu"."""
    from dsan_tf.common.frameworks import keras  # loaded already wherever batches are made

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return "gpu" if jax.devices()[0].platform in ("gpu", "cuda", "rocm") else \
            jax.devices()[0].platform
    if backend == "tensorflow":
        from dsan_tf.common.frameworks import tf

        return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"
    if backend == "torch":
        import torch

        return "gpu" if torch.cuda.is_available() else "cpu"
    return "cpu"
