"""Progress of the long steps (training epochs, dev passes, evaluate, predict, embed), on a
terminal and in a log file.

On a terminal (stderr a TTY) a tqdm bar shows done/total, rate and ETA. Otherwise (output
redirected, as long runs are launched) one line goes to stderr at most every
`DSAN_PROGRESS_SECONDS` seconds (default 30) and one when the step ends:

    epoch 3/30, training: 120/396 steps (30%), 4.1 steps/s, ETA 0:01:07, loss 0.7132
"""

import math
import os
import sys
import time

DEFAULT_INTERVAL = 30.0


def interval():
    """Seconds between progress lines in a log file (`DSAN_PROGRESS_SECONDS`)."""
    try:
        return max(0.0, float(os.environ.get("DSAN_PROGRESS_SECONDS", DEFAULT_INTERVAL)))
    except ValueError:
        return DEFAULT_INTERVAL


def pairs(count):
    """"1 pair", "2 pairs", "1,000 pairs": a count of pairs as a sentence says it."""
    return f"{count:,} pair" + ("" if count == 1 else "s")


def clock(seconds):
    """h:mm:ss."""
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """Counts the units of one long step.

    Args:
        what: what is being done, e.g. "evaluate snli_1.0_dev.jsonl".
        total: units in all, or None when unknown (no percentage, no ETA).
        unit: their name, plural ("pairs", "steps").
        stream: where to write (stderr: stdout stays the program's result).
        enabled: False shows nothing (a step too short to need it).
    """

    def __init__(self, what, total, unit, stream=None, enabled=True):
        self.what, self.total, self.unit = what, total, unit
        self.stream = stream or sys.stderr
        self.done, self.started = 0, time.perf_counter()
        # (time, units) when the first update came: rates and ETAs count from there, since
        # a first step carries one-time costs (tracing, compiling, filling buffers).
        self.first = None
        self.last_line, self.every = self.started, interval()
        self.bar, self.enabled = None, enabled
        if enabled and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=what, unit=f" {unit}", file=self.stream,
                            leave=False, dynamic_ncols=True)

    def __enter__(self):
        return self

    def __exit__(self, *error):
        self.close(finished=error[0] is None)

    def update_to(self, done, **values):
        """`done` units in all so far (a count that may jump: Keras' batch index with
        `steps_per_execution`); `values` as `update`'s."""
        self.update(done - self.done, **values)

    def update(self, count=1, **values):
        """`count` more units done; `values` (e.g. loss=0.71) are shown beside."""
        self.done += count
        if self.first is None:
            self.first = (time.perf_counter(), self.done)
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(count)
            if values:
                self.bar.set_postfix({k: f"{v:.4f}" for k, v in values.items()}, refresh=False)
            return
        now = time.perf_counter()
        if now - self.last_line >= self.every:
            self.last_line = now
            self._line(now, values)

    def close(self, finished=True, **values):
        """Ends the step: the bar goes; a log file gets its last line."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif finished and self.done and self.enabled:
            self._line(time.perf_counter(), values, final=True)

    def _line(self, now, values, final=False):
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        if not final and self.first and self.done > self.first[1] and now > self.first[0]:
            rate = (self.done - self.first[1]) / (now - self.first[0])
        parts = [f"{self.done:,}/{self.total:,} {self.unit}" if self.total
                 else f"{self.done:,} {self.unit}"]
        if self.total:
            parts[0] += f" ({100 * self.done / self.total:.0f}%)"
        parts.append(f"{rate:,.1f} {self.unit}/s")
        if final:
            parts.append(f"took {clock(elapsed)}")
        elif self.total and rate > 0:
            parts.append(f"ETA {clock(max(self.total - self.done, 0) / rate)}")
        parts += [f"{name} {value:.4f}" for name, value in values.items()
                  if isinstance(value, (int, float)) and math.isfinite(value)]
        print(f"{self.what}: {', '.join(parts)}", file=self.stream, flush=True)


def cardinality(dataset):
    """Batches in a `tf.data.Dataset` or a `keras.utils.PyDataset`, or None when
    TensorFlow cannot tell."""
    if not hasattr(dataset, "cardinality"):
        return len(dataset)
    count = int(dataset.cardinality())
    return count if count >= 0 else None
