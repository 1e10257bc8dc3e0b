"""The record of what a run has done, and the one commit point of each epoch.

A run's truth is its newest complete checkpoint, WORKDIR/checkpoints/epoch-N/
(`dsan_tf.core.rundir.RunDirectory.checkpoint`):

    state.weights.h5   the weights and the optimizer's state (its step count, learning
                       rate and moments)
    seeds.npz          the layers' random states (dropout's seed generators)
    best.keras         the best model so far (a hard link to the previous checkpoint's
                       when the epoch was not better)
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
"""

import os
import shutil

import keras
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

    def _write_checkpoint(self, partial, epochs, steps, rows):
        """Writes the checkpoint's files and its record.json, flushed, into the folder
        `partial`; returns the record."""
        atomic.write_point("checkpoint_weights")
        self.model.save_weights(os.path.join(partial, run_files.STATE))
        atomic.write_point("checkpoint_files")
        np.savez(os.path.join(partial, run_files.SEEDS),
                 **{f"state_{index}": keras.ops.convert_to_numpy(variable.value)
                    for index, variable in enumerate(seed_states(self.model))})
        if self.run.exists(run_files.BEST):
            atomic.link_or_copy(self.run.path(run_files.BEST),
                                os.path.join(partial, run_files.BEST))
        files = {}
        for file in sorted(os.listdir(partial)):
            path = os.path.join(partial, file)
            atomic.fsync_path(path)
            files[file] = [os.path.getsize(path), run_files.file_digest(path)]
        record = {"epochs": epochs, "steps": steps, "history": rows,
                  "best": self.keep_best.info(), "files": files}
        run_files.write_json(os.path.join(partial, run_files.RECORD), record)
        return record


def settle(run, checkpoint):
    """Makes history.csv, the event files and best.keras/best.json of `run` say what its
    record (`checkpoint`, the newest: `RunDirectory.checkpoint`; None before any commit)
    says: what an uncommitted epoch wrote is dropped, what a committed one has is kept.
    Called when a run resumes, and when it stops on an exception (Ctrl-C, a full disk)."""
    record = checkpoint.record if checkpoint else {"history": [], "epochs": 0, "steps": 0,
                                                   "best": None}
    rows = record["history"]
    if rows:
        expected = run_files.history_text(rows)
        current = None
        if run.exists(run_files.HISTORY):
            with open(run.path(run_files.HISTORY), encoding="utf-8", errors="replace") as stream:
                current = stream.read()
        if current != expected:
            run_files.write_history(run.path(run_files.HISTORY), rows)
    trim_events(run.path(run_files.TENSORBOARD), record["epochs"], record["steps"])
    best = checkpoint.file(run_files.BEST) if checkpoint else None
    if best and os.path.exists(best):
        if not (run.exists(run_files.BEST) and _same_file(best, run.path(run_files.BEST))):
            atomic.link_or_copy(best, run.path(run_files.BEST))
        if _read_or_none(run.path(run_files.BEST_INFO)) != record["best"]:
            run.write_json(run_files.BEST_INFO, record["best"])
    for name in (run_files.BEST, run_files.BEST_INFO, run_files.HISTORY):
        if not (best or rows) and os.path.lexists(run.path(name)):
            os.remove(run.path(name))  # written by a first epoch that was not committed
    _prune(run.path(run_files.CHECKPOINTS))


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


def _same_file(a, b):
    import filecmp

    return os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)


def trim_events(directory, epochs, steps):
    """Rewrites the event files under `directory` (a run's tensorboard/) without what a run
    wrote past its record: epoch summaries (`epoch_*`, at steps 0, 1, ... for epochs 1,
    2, ...) of epochs after `epochs`, batch summaries (`batch_*`) of steps after `steps`,
    and a probe's figures (probe/, at steps 1, 2, ...) after `epochs`; a record cut off
    by a kill is dropped too. Returns how many summary values were dropped."""
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
            records, whole = _read_records(path)
            kept, changed = [], not whole
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
            if changed:
                # Written aside under a name TensorBoard does not read (no "tfevents").
                partial = os.path.join(folder, "rewriting.partial")
                import tensorflow as tf  # event files exist only where it wrote them

                with tf.io.TFRecordWriter(partial) as writer:
                    for record in kept:
                        writer.write(record)
                atomic.publish(partial, path)
    return dropped


def _read_records(path):
    """(the records of a TFRecord file, whether it was whole): reading stops at a record
    cut off by a kill."""
    import tensorflow as tf  # event files exist only where it wrote them

    records = []
    try:
        for record in tf.data.TFRecordDataset(path):
            records.append(record.numpy())
    except tf.errors.DataLossError:
        return records, False
    return records, True
