"""The record of what a run has done, and the one commit point of each epoch.

A run's truth is its newest complete checkpoint, WORKDIR/checkpoints/epoch-N/
(`dsan_tf.core.rundir.RunDirectory.checkpoint`):

    state.weights.h5   the weights and the optimizer's state (its step count, learning
                       rate and moments)
    seeds.npz          the layers' random states (dropout's seed generators)
    best.keras         the best model so far (its own copy: a copy of the previous
                       checkpoint's when the epoch was not better; never a link to a file
                       users see, so damage to one file damages one checkpoint at most)
    record.json        epochs done, steps, the history rows, the best epoch, and each
                       file's size and SHA-256

The batches' order is drawn from the seed and the epochs done, so this is the whole state.

An epoch ends with the commit sequence (`dsan_tf.common.atomic.WRITE_POINTS["epoch"]`):
history.csv, the TensorBoard points (flushed) and, for a new best epoch, best.keras and
best.json; then the checkpoint, written into a temporary folder and renamed into place: the
rename is the epoch's commit point. Then checkpoints older than the previous one go (one
damaged later falls back to the previous). A kill before the rename leaves the previous
checkpoint the truth: the resumed run rewrites history.csv, the event files and best.keras
from it (`RunState.restore`), so that nothing of the uncommitted epoch remains, and trains
that epoch again to the same values.

The run's history.csv, best.keras, best.json and event files are views of the record:
`settle` checks each against it and writes again what is damaged or missing, saying so
in one line (a run resumed, a finished run trained again, an export).
"""

import errno
import os
import shutil
import struct

from dsan_tf.common.frameworks import keras
import numpy as np

from dsan_tf.common import atomic
from dsan_tf.common.errors import UsageError
from dsan_tf.core import rundir as run_files


class RunState(keras.callbacks.Callback):
    """Restores a run from its record and commits each epoch to it. Place it after every
    callback that writes or changes something at an epoch's end (TensorBoard, `KeepBest`,
    a learning-rate change), so that the commit holds their effects.

    Args:
        run: the `RunDirectory`, claimed and locked.
        keep_best: the `KeepBest` that says whether an epoch is the best so far.
        flush: callables that flush the TensorBoard writers before the commit.
    """

    def __init__(self, run, keep_best, flush=()):
        super().__init__()
        self.run, self.keep_best, self.flush = run, keep_best, tuple(flush)
        self.rows, self.checkpoint = [], None

    def restore(self, model):
        """Puts the run's newest checkpoint into `model` (built and compiled): weights,
        optimizer state, random states, and the best epoch into `keep_best`; rewrites
        history.csv, TensorBoard's event files and best.keras/best.json as the checkpoint
        says. Returns the epochs done (where `fit` starts)."""
        self.set_model(model)
        self.checkpoint = checkpoint = self.run.checkpoint()
        epochs = 0
        if checkpoint is not None:
            self._load(model, checkpoint)
            record = checkpoint.record
            self.rows, epochs = record["history"], record["epochs"]
            best = record["best"] or {}
            self.keep_best.restore(best.get("value"), best.get("epoch", 0))
        settle(self.run, checkpoint)
        return epochs

    def _load(self, model, checkpoint):
        optimizer = model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(model.trainable_variables)
        path = checkpoint.file(run_files.STATE)
        try:
            model.load_weights(path)
            with np.load(checkpoint.file(run_files.SEEDS)) as saved:
                states = seed_states(model)
                if len(saved.files) != len(states):
                    raise ValueError(f"{len(saved.files)} random states for {len(states)}")
                for index, variable in enumerate(states):
                    variable.assign(saved[f"state_{index}"])
        except (OSError, ValueError, KeyError) as error:
            raise UsageError(f"{checkpoint.path} does not fit this run's model ({error}); "
                             "give another workdir, or overwrite to train afresh.",
                             fields=("workdir", "overwrite")) from None

    def on_epoch_end(self, epoch, logs=None):
        run = self.run
        row = {"epoch": epoch + 1, **{
            name: int(value) if isinstance(value, (int, np.integer)) else float(value)
            for name, value in (logs or {}).items() if isinstance(value, (int, float, np.number))}}
        rows = [*self.rows, row]
        atomic.write_point("history")
        run_files.write_history(run.path(run_files.HISTORY), rows)
        atomic.write_point("tensorboard")
        for flush in self.flush:
            flush()
        if self.keep_best.improved:
            atomic.write_point("best")
            atomic.write_with(run.path(run_files.BEST), self.model.save, ".keras")
            run.write_json(run_files.BEST_INFO, self.keep_best.info())
        steps = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        self._commit(epoch + 1, steps, rows)
        self.rows = rows

    def _commit(self, epochs, steps, rows):
        """Writes the checkpoint of `epochs` into a temporary folder and renames it into
        place (the commit point); then removes checkpoints before the previous one."""
        folder = self.run.path(run_files.CHECKPOINTS)
        os.makedirs(folder, exist_ok=True)
        name = run_files.checkpoint_name(epochs)
        partial = os.path.join(folder, f".{name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        try:
            require_space(folder, self._checkpoint_bytes())
            record = self._write_checkpoint(partial, epochs, steps, rows)
        except BaseException:  # a full disk, Ctrl-C: the epoch is not committed
            shutil.rmtree(partial, ignore_errors=True)
            raise
        atomic.write_point("commit")
        final = os.path.join(folder, name)
        os.rename(partial, final)
        atomic.fsync_path(folder)
        self.checkpoint = run_files.Checkpoint(final, record)
        atomic.write_point("prune")
        _prune(folder)

    def _checkpoint_bytes(self):
        """About the bytes the next checkpoint takes: the previous one's files, else the
        model's and optimizer's variables as stored (h5py ends the process where a
        disk fills while it writes: the space is checked before)."""
        if self.checkpoint is not None:
            return sum(size for size, _ in self.checkpoint.record["files"].values())
        variables = [*self.model.variables, *(self.model.optimizer.variables
                                              if self.model.optimizer else [])]
        stored = sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables)
        best = self.run.path(run_files.BEST)
        return stored + (os.path.getsize(best) if os.path.exists(best) else 0)

    def _best_source(self):
        """The best model this checkpoint holds a copy of: the one just written (a new best
        epoch), else the previous checkpoint's (never the run's view, which a user may have
        damaged meanwhile); None before any epoch had a finite dev accuracy."""
        if self.keep_best.improved:
            return self.run.path(run_files.BEST)
        previous = self.checkpoint.file(run_files.BEST) if self.checkpoint else None
        return previous if previous and os.path.exists(previous) else None

    def _write_checkpoint(self, partial, epochs, steps, rows):
        """Writes the checkpoint's files and its record.json, flushed, into the folder
        `partial`; returns the record."""
        atomic.write_point("checkpoint_weights")
        self.model.save_weights(os.path.join(partial, run_files.STATE))
        atomic.write_point("checkpoint_files")
        np.savez(os.path.join(partial, run_files.SEEDS),
                 **{f"state_{index}": keras.ops.convert_to_numpy(variable.value)
                    for index, variable in enumerate(seed_states(self.model))})
        best = self._best_source()
        if best is not None:
            atomic.copy_file(best, os.path.join(partial, run_files.BEST))
        files = {}
        for file in sorted(os.listdir(partial)):
            path = os.path.join(partial, file)
            atomic.fsync_path(path)
            files[file] = [os.path.getsize(path), run_files.file_digest(path)]
        record = {"epochs": epochs, "steps": steps, "history": rows,
                  "best": self.keep_best.info(), "files": files}
        run_files.write_json(os.path.join(partial, run_files.RECORD), record)
        return record


def settle(run, checkpoint, say=print):
    """Makes history.csv, the event files and best.keras/best.json of `run` say what its
    record (`checkpoint`, the newest intact: `RunDirectory.checkpoint`; None before any
    commit) says: what an uncommitted epoch wrote is dropped, what a committed one has is
    kept, and a view damaged or missing is written again from the record, said in one
    line (`say`). Temporary files a killed process left go. Called when a run resumes,
    when it stops on an exception (Ctrl-C, a full disk), and on a finished run trained or
    exported again."""
    record = checkpoint.record if checkpoint else {"history": [], "epochs": 0, "steps": 0,
                                                   "best": None}
    _remove_leftovers(run)
    rows = record["history"]
    if rows:
        _settle_history(run, rows, checkpoint, say)
    trim_events(run.path(run_files.TENSORBOARD), record["epochs"], record["steps"], rows,
                say=say)
    best = checkpoint.file(run_files.BEST) if checkpoint else None
    if best and os.path.exists(best):
        _settle_best(run, checkpoint, say)
    for name in (run_files.BEST, run_files.BEST_INFO, run_files.HISTORY):
        if not (best or rows) and os.path.lexists(run.path(name)):
            os.remove(run.path(name))  # written by a first epoch that was not committed
    _prune(run.path(run_files.CHECKPOINTS))


def _settle_history(run, rows, checkpoint, say):
    """history.csv as the record's `rows`: rows past them (an uncommitted epoch) dropped
    silently, a file cut, garbled or missing written again, saying so."""
    expected = run_files.history_text(rows)
    current = None
    if run.exists(run_files.HISTORY):
        with open(run.path(run_files.HISTORY), encoding="utf-8", errors="replace") as stream:
            current = stream.read()
    if current == expected:
        return
    run_files.write_history(run.path(run_files.HISTORY), rows)
    if current is None:
        say(f"{run.path(run_files.HISTORY)} was missing; written again from {checkpoint.path}.")
    elif not current.startswith(expected):  # not merely an uncommitted epoch's row after
        say(f"{run.path(run_files.HISTORY)} did not match the record (damaged or edited); "
            f"written again from {checkpoint.path}.")


def _settle_best(run, checkpoint, say):
    """best.keras (a copy of the checkpoint's, checked by its SHA-256) and best.json."""
    view, size_digest = run.path(run_files.BEST), checkpoint.record["files"][run_files.BEST]
    info = _read_or_none(run.path(run_files.BEST_INFO))
    # A new best of an epoch a kill left uncommitted is replaced silently: not damage.
    uncommitted = isinstance(info, dict) and info.get("epoch", 0) > checkpoint.epochs
    if not os.path.exists(view) or os.path.getsize(view) != size_digest[0] or \
            run_files.file_digest(view) != size_digest[1]:
        missing = not os.path.exists(view)
        atomic.copy_file(checkpoint.file(run_files.BEST), view)
        if missing:
            say(f"{view} was missing; copied again from {checkpoint.path}.")
        elif not uncommitted:
            say(f"{view} is not the best model its record lists (damaged or replaced); "
                f"copied again from {checkpoint.path}.")
    if info != checkpoint.record["best"]:
        existed = run.exists(run_files.BEST_INFO)
        run.write_json(run_files.BEST_INFO, checkpoint.record["best"])
        if not existed:
            say(f"{run.path(run_files.BEST_INFO)} was missing; written again from "
                f"{checkpoint.path}.")
        elif not uncommitted:
            say(f"{run.path(run_files.BEST_INFO)} did not match the record (damaged or "
                f"edited); written again from {checkpoint.path}.")


def _remove_leftovers(run):
    """Temporary files of a killed process in the run directory and its TensorBoard
    folders (the caller holds the lock: no other process writes there)."""
    folders = [run.workdir] + [folder for folder, _, _ in os.walk(run.path(
        run_files.TENSORBOARD))]
    for folder in folders:
        for name in os.listdir(folder) if os.path.isdir(folder) else ():
            path = os.path.join(folder, name)
            if (name.startswith(".") and ".partial" in name or name == "rewriting.partial") \
                    and os.path.isfile(path):
                os.remove(path)


def require_space(folder, needed):
    """`OSError` (no space left, naming `folder`) where the disk holding `folder` has not
    `needed` bytes free, and a margin."""
    free = shutil.disk_usage(folder).free
    if free < needed * 1.1 + (1 << 16):
        raise OSError(errno.ENOSPC, f"No space left on device ({free:,} bytes free, about "
                      f"{needed:,} needed)", folder)


def _read_or_none(path):
    """A view's JSON, or None where it is missing or cut (it is then written again)."""
    try:
        return run_files.read_json(path) if os.path.exists(path) else None
    except UsageError:
        return None


def _prune(folder):
    """Removes the checkpoints before the newest two (the newest and the one it falls back
    to) and any never committed (temporary folders)."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    committed = [name for name in names if name.startswith("epoch-") and name[6:].isdigit()]
    for name in names:
        if name.startswith(".") or name in committed[:-2]:
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def seed_states(model):
    """The model's random states (dropout's seed generators): not among its weights."""
    return [v for v in model.variables if "seed_generator_state" in v.path]


def trim_events(directory, epochs, steps, rows=(), say=print):
    """Rewrites the event files under `directory` (a run's tensorboard/) without what a run
    wrote past its record: epoch summaries (`epoch_*`, at steps 0, 1, ... for epochs 1,
    2, ...) of epochs after `epochs`, batch summaries (`batch_*`) of steps after `steps`,
    and a probe's figures (probe/, at steps 1, 2, ...) after `epochs`; a record cut off
    at the end by a kill is dropped too. A damaged record inside a file is skipped, not
    taken for the end: the records after it are kept, the epoch points it held are
    written again from the record's history `rows`, and the repair is said in one line.
    Returns how many summary values were dropped."""
    from tensorboard.compat.proto import event_pb2

    def drop(folder, tag, step):
        if tag.startswith("batch_"):
            return step > steps
        if tag.startswith("epoch_"):
            return step >= epochs
        return os.path.basename(folder) == "probe" and step > epochs

    dropped = 0
    for folder, _, names in os.walk(directory) if os.path.isdir(directory) else ():
        for name in sorted(names):
            if "tfevents" not in name:
                continue
            path = os.path.join(folder, name)
            records, damaged, cut = _read_records(path)
            kept, changed = [], bool(damaged or cut)
            for record in records:
                event = event_pb2.Event.FromString(record)
                values = event.summary.value
                others = [value for value in values if not drop(folder, value.tag, event.step)]
                if len(others) < len(values):
                    changed, dropped = True, dropped + len(values) - len(others)
                    if not others:
                        continue
                    del values[:]
                    values.extend(others)
                    record = event.SerializeToString()
                kept.append(record)
            rebuilt = _rebuilt_points(folder, kept, rows[:epochs]) if damaged or cut else []
            if changed:
                _write_records(path, kept + rebuilt)
            if cut and rebuilt and not damaged:
                say(f"{path} was cut short; {len(rebuilt)} epoch point(s) it lost written "
                    "again from the record.")
            if damaged:
                spans = ", ".join(f"bytes {start:,}-{end:,}" for start, end in damaged)
                say(f"{path} had damaged records ({spans}); skipped, the {len(kept):,} "
                    f"records around them kept and {len(rebuilt)} epoch point(s) written "
                    "again from the record.")
    return dropped


def _rebuilt_points(folder, records, rows):
    """Events for the epoch points (`epoch_*` tags the file holds) that `records` lack,
    from the record's history `rows`: a train folder's `epoch_X` is a row's X, a
    validation folder's is its val_X."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2

    have, tags, metadata = set(), set(), {}
    for record in records:
        event = event_pb2.Event.FromString(record)
        for value in event.summary.value:
            if value.tag.startswith("epoch_"):
                have.add((value.tag, event.step))
                tags.add(value.tag)
                metadata.setdefault(value.tag, value.metadata)
    prefix = "val_" if os.path.basename(folder) == "validation" else ""
    events = []
    for row in rows:
        for tag in sorted(tags):
            key = prefix + tag[len("epoch_"):]
            if (tag, row["epoch"] - 1) in have or key not in row:
                continue
            tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[row[key]])
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                tag=tag, tensor=tensor, metadata=metadata[tag])])
            events.append(event_pb2.Event(step=row["epoch"] - 1, summary=summary)
                          .SerializeToString())
    return events


_HEADER, _CRC = struct.Struct("<Q"), struct.Struct("<I")


def _read_records(path):
    """(the records of a TFRecord file, the (start, end) byte spans of damaged records
    skipped inside it, whether its end was cut off): each record's length and bytes are
    checked by their CRC-32C; after a damaged one, reading goes on at the next place a
    whole record starts, so that damage in the middle loses only what it hit."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    with open(path, "rb") as stream:
        content = stream.read()
    records, damaged, position, bad = [], [], 0, None
    while position + 12 <= len(content):
        header = content[position:position + 8]
        if _CRC.unpack_from(content, position + 8)[0] == masked_crc32c(header):
            end = position + 12 + _HEADER.unpack(header)[0]
            if end + 4 <= len(content) and \
                    _CRC.unpack_from(content, end)[0] == masked_crc32c(content[position + 12:end]):
                if bad is not None:
                    damaged.append((bad, position))
                    bad = None
                records.append(content[position + 12:end])
                position = end + 4
                continue
        bad = position if bad is None else bad
        position += 1
    # What no whole record follows is where a kill cut the file: not damage.
    cut = bad is not None or position < len(content)
    return records, damaged, cut


def _write_records(path, records):
    """Writes `records` as the TFRecord file `path`, atomically (a full disk leaves the
    file as it was: `OSError`)."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    with atomic.stream(path, "wb") as out:
        for record in records:
            header = _HEADER.pack(len(record))
            out.write(header + _CRC.pack(masked_crc32c(header)) + record +
                      _CRC.pack(masked_crc32c(record)))
