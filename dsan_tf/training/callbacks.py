"""Keras callbacks of the training command (what `model.fit` does not do by itself)."""

import dataclasses
import json
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from tensorboard.plugins.hparams import api as hp

from dsan_tf.common import progress
from dsan_tf.common.errors import UsageError
from dsan_tf.evaluation import analysis, plots


# What `EpochLog` adds to the logs besides `seconds` that is no metric: TensorBoard writes
# its own learning rate, and the epoch's line shows neither.
NOT_METRICS = ("learning_rate", "steps")


class EpochLog(keras.callbacks.Callback):
    """Adds to the epoch logs `seconds` (wall time of the epoch, validation included),
    `learning_rate` (the optimizer's at the epoch's last step, before any change at its
    end) and `steps` (training steps so far), so that history.csv holds them: the study
    plots accuracy against steps, and a schedule can be read epoch by epoch."""

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        logs["seconds"] = time.perf_counter() - self._started
        optimizer = self.model.optimizer
        logs["learning_rate"] = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
        logs["steps"] = int(keras.ops.convert_to_numpy(optimizer.iterations))


class HistoryCSV(keras.callbacks.CSVLogger):
    """Keras' CSVLogger (history.csv, appended to on resume) with epochs counted from 1, as
    the log, results.json and the model card count them."""

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch + 1, logs)


class TensorBoard(keras.callbacks.TensorBoard):
    """Keras' TensorBoard callback whose epoch summaries (`epoch_loss`, `epoch_accuracy`,
    `epoch_learning_rate` under train/, and `epoch_loss`, `epoch_accuracy` under
    validation/) are written at every epoch end.

    With an integer `update_freq`, Keras leaves the batch summaries' `record_if(step %
    update_freq == 0)` open at epoch end, so its epoch summaries are recorded only when the
    last step's number is a multiple of `update_freq` (tensorflow/tensorboard#4975): for
    most runs never.
    """

    def on_train_begin(self, logs=None):
        # A resumed run continues its steps: BackupAndRestore, earlier in the callbacks,
        # has restored the optimizer's step count (Keras starts from 0 in every process).
        # The steps an interrupted sitting wrote past it are trained again now: dropped
        # from its event files first, so that each step has one value (issue 50, item 14).
        restored = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if restored:
            drop_batch_steps_after(os.path.join(self.log_dir, "train"), restored)
        super().on_train_begin(logs)
        self._global_train_batch = restored
        self._pop_writer()
        self._push_writer(self._train_writer, self._global_train_batch)

    def _log_epoch_metrics(self, epoch, logs):
        # Keras writes its own epoch_learning_rate; the step count is not a metric.
        logs = {name: value for name, value in (logs or {}).items()
                if name not in NOT_METRICS}
        with self.summary.record_if(True):
            super()._log_epoch_metrics(epoch, logs)


def drop_batch_steps_after(directory, step):
    """Rewrites the event files in `directory` without the batch summaries (`batch_*`
    tags) of steps after `step`; other events stay as they are. Returns how many summary
    values were dropped."""
    from tensorboard.compat.proto import event_pb2

    dropped = 0
    if not os.path.isdir(directory):
        return dropped
    for name in sorted(os.listdir(directory)):
        if not name.startswith("events.out.tfevents."):
            continue
        path = os.path.join(directory, name)
        kept, changed = [], False
        for record in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(record.numpy())
            values = event.summary.value
            if event.step > step and any(value.tag.startswith("batch_") for value in values):
                others = [value for value in values if not value.tag.startswith("batch_")]
                changed, dropped = True, dropped + len(values) - len(others)
                if not others:
                    continue
                del values[:]
                values.extend(others)
            kept.append(event.SerializeToString())
        if changed:
            # Written aside under a name TensorBoard does not read (no "tfevents" in it).
            partial = os.path.join(directory, "rewriting.partial")
            with tf.io.TFRecordWriter(partial) as writer:
                for record in kept:
                    writer.write(record)
            os.replace(partial, path)
    return dropped


class SeedStates(keras.callbacks.Callback):
    """Keeps the random states of the model's layers (dropout's seed generators) beside
    BackupAndRestore's checkpoint, which holds weights only, and puts them back when a run
    resumes: a resumed or extended run draws the dropout masks that a run from the start
    draws. Place it after `keras.callbacks.BackupAndRestore`.

    Args:
        path: the `.npz` file (in the backup directory).
    """

    def __init__(self, path):
        super().__init__()
        self.path = path

    def _states(self):
        return [v for v in self.model.variables if "seed_generator_state" in v.path]

    def on_train_begin(self, logs=None):
        if os.path.exists(self.path):
            saved = np.load(self.path)
            states = self._states()
            if len(saved.files) == len(states):
                for index, variable in enumerate(states):
                    variable.assign(saved[f"state_{index}"])

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        partial = self.path + ".partial.npz"
        np.savez(partial, **{f"state_{index}": keras.ops.convert_to_numpy(variable.value)
                             for index, variable in enumerate(self._states())})
        os.replace(partial, self.path)


@dataclasses.dataclass(frozen=True)
class NaNStop:
    """Where a run stopped on a non-finite loss: the loss, the epoch (from 1) and the step
    of that epoch (from 1)."""

    loss: float
    epoch: int
    step: int

    def error(self):
        """The `UsageError` that ends the run, naming the field to change."""
        return UsageError(f"training stopped: the loss became {self.loss} at step "
                          f"{self.step} of epoch {self.epoch}; lower learning_rate or check "
                          "the data. The best model so far is kept.",
                          fields=("learning_rate",))


class StopOnNaN(keras.callbacks.Callback):
    """Stops at the first non-finite training loss; `stopped` says where (`NaNStop`)."""

    stopped = None
    _epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.stopped = NaNStop(float(loss), self._epoch + 1, batch + 1)
            self.model.stop_training = True


class KeepBest(keras.callbacks.Callback):
    """Saves the model whenever dev accuracy improves; remembers the best across resumes
    (a fresh ModelCheckpoint would forget it and overwrite a better model). `best` and
    `best_epoch` (from 1; 0 before any) are what the other callbacks and the run's results
    read; `info_path` (best.json) keeps them for a resumed run.
    """

    def __init__(self, model_path, info_path, monitor="val_accuracy"):
        super().__init__()
        self.model_path, self.info_path, self.monitor = model_path, info_path, monitor
        self._load()

    def _load(self):
        self.best, self.best_epoch = -math.inf, 0
        if os.path.exists(self.info_path):
            with open(self.info_path) as stream:
                info = json.load(stream)
            self.best, self.best_epoch = info["value"], info["epoch"]

    def on_train_begin(self, logs=None):
        self._load()

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None or not math.isfinite(value) or value <= self.best:
            return
        self.best, self.best_epoch = float(value), epoch + 1
        self.model.save(self.model_path)
        with open(self.info_path + ".partial", "w") as stream:
            json.dump({"epoch": epoch + 1, "monitor": self.monitor, "value": self.best}, stream)
        os.replace(self.info_path + ".partial", self.info_path)


class HParams(keras.callbacks.Callback):
    """Writes the run's hyperparameters for TensorBoard's HParams dashboard."""

    def __init__(self, logdir, hparams, trial):
        super().__init__()
        self.logdir, self.hparams, self.trial = logdir, hparams, trial

    def on_train_begin(self, logs=None):
        values = {k: v if isinstance(v, (bool, int, float, str)) else str(v)
                  for k, v in self.hparams.items()}
        with tf.summary.create_file_writer(self.logdir).as_default():
            hp.hparams(values, trial_id=self.trial)


class ProbeFigures(keras.callbacks.Callback):
    """Logs the analysis figures of a fixed probe sentence to TensorBoard at each epoch end
    (images under the `probe` run), from the model being trained."""

    def __init__(self, logdir, tokens, ids):
        super().__init__()
        self.logdir, self.tokens, self.ids = logdir, tokens, ids

    def on_epoch_end(self, epoch, logs=None):
        figures = plots.sentence_figures(self.tokens,
                                         analysis.sentence_analysis(self.model.backbone, self.ids))
        with tf.summary.create_file_writer(self.logdir).as_default():
            for name, figure in figures.items():
                image = tf.image.decode_png(plots.png_bytes(figure), channels=4)
                tf.summary.image(name, image[None], step=epoch + 1)


class EarlyStopping(keras.callbacks.Callback):
    """Stops when dev accuracy has not improved for `patience` epochs, as Keras'
    `EarlyStopping("val_accuracy", patience)`; with `cycle_epochs` (cosine restarts every T
    epochs) it decides only at a cycle's end (epochs T, 2T, ...), so a run never stops
    during a cycle, before its low learning rates. The best epoch is `keep_best`'s (a
    `KeepBest` placed before this callback), which a resumed run restores (Keras' own
    forgets it)."""

    def __init__(self, patience, cycle_epochs, keep_best):
        super().__init__()
        self.patience, self.cycle_epochs, self.keep_best = patience, cycle_epochs, keep_best
        self.stopped_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        at_cycle_end = not self.cycle_epochs or (epoch + 1) % self.cycle_epochs == 0
        best = self.keep_best
        if epoch + 1 - best.best_epoch >= self.patience and at_cycle_end:
            self.stopped_epoch = epoch + 1
            self.model.stop_training = True
            print(f"early stop after epoch {epoch + 1}: dev accuracy last improved at "
                  f"epoch {best.best_epoch} ({best.best:.4f})", flush=True)



class HalveOnDevDrop(keras.callbacks.Callback):
    """Halves the learning rate after an epoch whose dev accuracy is below the previous
    epoch's (AF-DMN, Section 5.2: "halved when the accuracy on the development set drops").
    """

    def __init__(self):
        super().__init__()
        self.previous = None

    def on_epoch_end(self, epoch, logs=None):
        accuracy = (logs or {}).get("val_accuracy")
        if accuracy is None:
            return
        if self.previous is not None and accuracy < self.previous:
            rate = self.model.optimizer.learning_rate
            rate.assign(rate * 0.5)
            print(f"dev accuracy fell ({self.previous:.4f} -> {accuracy:.4f}): learning rate "
                  f"halved to {float(rate.numpy()):.3g}")
        self.previous = accuracy


class TrainingProgress(keras.callbacks.Callback):
    """The progress of `model.fit` (it replaces Keras' own `verbose` output): "Epoch N/M",
    a `progress.Progress` over the epoch's training steps and one over its dev pass, and a
    line of the epoch's metrics at its end.

    Args:
        epochs: epochs of the run.
        train_steps: steps per epoch (None when unknown).
        dev_steps: batches of one dev pass (None when unknown).
    """

    def __init__(self, epochs, train_steps, dev_steps):
        super().__init__()
        self.epochs, self.train_steps, self.dev_steps = epochs, train_steps, dev_steps
        self.epoch, self.current = 0, None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch + 1
        print(f"Epoch {self.epoch}/{self.epochs}", flush=True)
        self.current = progress.Progress(f"epoch {self.epoch}/{self.epochs}, training",
                                         self.train_steps, "steps")

    def on_train_batch_end(self, batch, logs=None):
        if self.current is not None:
            # `batch` is the execution's last step (steps_per_execution: several a call).
            self.current.update_to(batch + 1, loss=float((logs or {}).get("loss", math.nan)))

    def on_test_begin(self, logs=None):
        if self.current is not None:  # the training steps are done
            self.current.close()
        self.current = progress.Progress(f"epoch {self.epoch}/{self.epochs}, dev",
                                         self.dev_steps, "batches")

    def on_test_batch_end(self, batch, logs=None):
        if self.current is not None:
            self.current.update_to(batch + 1)

    def on_test_end(self, logs=None):
        if self.current is not None:
            self.current.close()
            self.current = None

    def on_epoch_end(self, epoch, logs=None):
        if self.current is not None:
            self.current.close()
            self.current = None
        shown = [f"{name} {value:.4f}" for name, value in (logs or {}).items()
                 if name not in ("seconds", *NOT_METRICS)
                 and isinstance(value, (int, float))]
        seconds = (logs or {}).get("seconds")
        took = f" ({seconds:.1f} s)" if seconds is not None else ""
        print(f"epoch {self.epoch}/{self.epochs}: {', '.join(shown)}{took}", flush=True)


class EvaluationProgress(keras.callbacks.Callback):
    """The progress of `model.evaluate`, as a `progress.Progress` over its batches."""

    def __init__(self, what, steps):
        super().__init__()
        self.what, self.steps, self.current = what, steps, None

    def on_test_begin(self, logs=None):
        self.current = progress.Progress(self.what, self.steps, "batches")

    def on_test_batch_end(self, batch, logs=None):
        # `batch` is the execution's last batch (steps_per_execution: several a call).
        self.current.update_to(batch + 1)

    def on_test_end(self, logs=None):
        self.current.close()
