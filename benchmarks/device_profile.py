r"""Where a compiled program's device time goes: a JAX profiler trace of a few
calls, read back as kernels grouped by the HLO instruction that launched them.

    KERAS_BACKEND=jax python -m benchmarks.shape_costs --shapes=23x24 --steps=1024 \
        --scan_only=32 --profile=prof --output=scan.jsonl

On a GPU the trace holds one event per kernel on the device's plane (CUPTI); on a CPU
the XLA runtime's thunks on the host's threads stand in for them, so the same summary
can be tried without a GPU. The summary says, per step: how many kernels ran, the sum of
their times, how long the device was busy (the union of their intervals) and the span
from the first kernel's start to the last one's end. Busy well under the span means the
device waited between kernels (launches, the loop's condition); busy near the span means
the kernels' own time is the step.
"""

import collections
import glob
import gzip
import json
import os
import shutil


def trace(function, args, calls, directory):
    """Runs `function(*args)` `calls` times under the JAX profiler, writing the trace
    under `directory`; returns the path of its XSpace file. `function` returns
    (outputs, state) and takes the state first, donated: each call gets the last state."""
    import jax

    state, rest = args[0], args[1:]
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # Python's calls would be most of the file
    options.host_tracer_level = 1 if _on_gpu() else 2  # a CPU's thunks are host events
    with jax.profiler.trace(directory, profiler_options=options):
        for _ in range(calls):
            _, state = function(state, *rest)
        jax.block_until_ready(state)
    paths = sorted(glob.glob(os.path.join(directory, "**", "*.xplane.pb"), recursive=True),
                   key=os.path.getmtime)
    # The profiler nests its file four folders down; a copy beside the summary travels.
    with open(paths[-1], "rb") as source, \
            gzip.open(os.path.join(directory, "trace.xplane.pb.gz"), "wb") as copy:
        shutil.copyfileobj(source, copy)
    return paths[-1]


def _on_gpu():
    import jax
    return jax.devices()[0].platform == "gpu"


def _events(path):
    """(line, name, hlo_op, start_ns, duration_ns) of every timed event: a GPU's
    kernels where there is a device plane, else the CPU runtime's XLA thunks."""
    from jax._src.lib import _profile_data

    data = _profile_data.ProfileData.from_file(path)
    devices = [plane for plane in data.planes if plane.name.startswith("/device:GPU")]
    rows = []
    for plane in devices or [p for p in data.planes if p.name == "/host:CPU"]:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if not devices and "hlo_op" not in stats:
                    continue  # on a CPU only XLA's thunks stand for kernels
                rows.append((line.name, event.name, str(stats.get("hlo_op", "")),
                             event.start_ns, event.duration_ns))
    return rows


def _median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def _merged(intervals):
    """The stretches (start, end) covered by the union of (start, end) intervals, in
    order: their lengths sum to the busy time, the spaces between them are the gaps."""
    stretches = []
    for start, stop in sorted(intervals):
        if stretches and start <= stretches[-1][1]:
            stretches[-1][1] = max(stretches[-1][1], stop)
        else:
            stretches.append([start, stop])
    return stretches


def _union(intervals):
    """Nanoseconds covered by the union of (start, end) intervals."""
    return sum(stop - start for start, stop in _merged(intervals))


def _gaps(intervals):
    """The idle stretches between the union's covered stretches, in ns."""
    stretches = _merged(intervals)
    return [later[0] - earlier[1] for earlier, later in zip(stretches, stretches[1:])]


def summarize(path, steps, top=60):
    """The trace at `path` of `steps` training steps, per step: {kernels, kernel_ms,
    busy_ms, span_ms, median_kernel_us, median_gap_us (idle between kernels), lines:
    {line: kernels}, top: [the `top` HLO instructions by time,
    each {op, kernel, calls, us}]}. Lines that are not a stream's (XLA's derived
    'XLA Ops'/'XLA Modules' timelines) are left out of the sums."""
    rows = _events(path)
    derived = ("XLA Ops", "XLA Modules", "Steps", "Framework", "Source", "TraceMe")
    kernels = [row for row in rows if not row[0].startswith(derived)]
    if not kernels:
        return {"kernels": 0, "note": "no device events in the trace"}
    intervals = [(start, start + duration) for *_, start, duration in kernels]
    by_op = collections.defaultdict(lambda: [0, 0.0, ""])
    for _, name, op, _, duration in kernels:
        entry = by_op[op or name]
        entry[0] += 1
        entry[1] += duration
        entry[2] = name
    lines = collections.Counter(row[0] for row in kernels)
    ranked = sorted(by_op.items(), key=lambda item: -item[1][1])
    per_step = lambda ns: round(ns / 1e6 / steps, 4)  # noqa: E731
    return {
        "steps": steps, "kernels": round(len(kernels) / steps, 1),
        "kernel_ms": per_step(sum(duration for *_, duration in kernels)),
        "busy_ms": per_step(_union(intervals)),
        "span_ms": per_step(max(e for _, e in intervals) - min(s for s, _ in intervals)),
        "median_kernel_us": round(_median([row[-1] for row in kernels]) / 1e3, 2),
        "median_gap_us": round(_median(_gaps(intervals)) / 1e3, 2),
        "lines": {line: round(count / steps, 1) for line, count in lines.items()},
        "top": [{"op": op, "kernel": kernel[:80], "calls": round(calls / steps, 2),
                 "us": round(ns / 1e3 / steps, 2)}
                for op, (calls, ns, kernel) in ranked[:top]],
    }


def write(summary, directory):
    """Writes `summary` as `directory`/kernels.json (beside the trace)."""
    with open(os.path.join(directory, "kernels.json"), "w", encoding="utf-8") as stream:
        json.dump(summary, stream, indent=1)
