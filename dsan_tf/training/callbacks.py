"""Keras callbacks of the training command (what `model.fit` does not do by itself).

TensorBoard's files are TensorFlow's to write: its callbacks import it when they write, and
a run where it is not installed (JAX or PyTorch alone) trains without them
(`dsan_tf.common.quiet.tensorflow_importable`)."""

import dataclasses
import math
import time

from dsan_tf.common.frameworks import keras

from dsan_tf.common import interrupt, progress
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


class ReportEpochs(keras.callbacks.Callback):
    """Calls `report(epoch, logs)` at each epoch's end (`epoch` counted from 1): placed
    after the run's own callbacks, once the epoch is committed to the record, so that
    what it reports (a sweep's dev accuracy to Ray Tune's scheduler) is what a resumed run
    has.

    Args:
        report: a function of (epoch, {metric: value}).
    """

    def __init__(self, report):
        super().__init__()
        self.report = report

    def on_epoch_end(self, epoch, logs=None):
        self.report(epoch + 1, dict(logs or {}))


class Interruptible(keras.callbacks.Callback):
    """Stops at the end of the batch a Ctrl-C came in, where a finalizer swallowed its
    KeyboardInterrupt (`dsan_tf.common.interrupt`)."""

    def on_train_batch_end(self, batch, logs=None):
        interrupt.check()

    def on_test_batch_end(self, batch, logs=None):
        interrupt.check()

    def on_predict_batch_end(self, batch, logs=None):
        interrupt.check()

    def on_epoch_end(self, epoch, logs=None):
        interrupt.check()


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
        # A resumed run continues its steps: `RunState.restore` has restored the
        # optimizer's step count (Keras starts from 0 in every process) and dropped the
        # summaries an interrupted sitting wrote past it.
        super().on_train_begin(logs)
        self._global_train_batch = int(keras.ops.convert_to_numpy(
            self.model.optimizer.iterations))
        self._pop_writer()
        self._push_writer(self._train_writer, self._global_train_batch)

    def flush(self):
        """Flushes the event files (before an epoch is committed: `RunState`)."""
        for writer in self._writers.values():
            writer.flush()

    def _log_epoch_metrics(self, epoch, logs):
        # Keras writes its own epoch_learning_rate; the step count is not a metric.
        logs = {name: value for name, value in (logs or {}).items()
                if name not in NOT_METRICS}
        with self.summary.record_if(True):
            super()._log_epoch_metrics(epoch, logs)


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
    """Follows the best dev accuracy across the run (a resumed one included: `RunState`
    restores it): `best`, `best_epoch` (from 1; 0 before any) and `improved` (whether the
    epoch just ended is a new best), which `RunState` commits (best.keras, best.json) and
    `EarlyStopping` reads. Place it before both."""

    def __init__(self, monitor="val_accuracy"):
        super().__init__()
        self.monitor = monitor
        self.restore(None, 0)

    def restore(self, value, epoch):
        self.best = -math.inf if value is None else value
        self.best_epoch, self.improved = epoch, False

    def info(self):
        """best.json's content (None before any epoch had a finite value)."""
        return ({"epoch": self.best_epoch, "monitor": self.monitor, "value": self.best}
                if self.best_epoch else None)

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        self.improved = value is not None and math.isfinite(value) and value > self.best
        if self.improved:
            self.best, self.best_epoch = float(value), epoch + 1


class HParams(keras.callbacks.Callback):
    """Writes the run's hyperparameters for TensorBoard's HParams dashboard."""

    def __init__(self, logdir, hparams, trial):
        super().__init__()
        self.logdir, self.hparams, self.trial = logdir, hparams, trial

    def on_train_begin(self, logs=None):
        values = {k: v if isinstance(v, (bool, int, float, str)) else str(v)
                  for k, v in self.hparams.items()}
        from dsan_tf.common.frameworks import tf
        from tensorboard.plugins.hparams import api as hp

        with tf.summary.create_file_writer(self.logdir).as_default():
            hp.hparams(values, trial_id=self.trial)


class ProbeFigures(keras.callbacks.Callback):
    """Logs the analysis figures of a fixed probe sentence to TensorBoard at each epoch end
    (images under the `probe` run), from the model being trained."""

    def __init__(self, logdir, tokens, ids):
        super().__init__()
        self.logdir, self.tokens, self.ids = logdir, tokens, ids

    def on_epoch_end(self, epoch, logs=None):
        from dsan_tf.common.frameworks import tf

        figures = plots.sentence_figures(self.tokens,
                                         analysis.sentence_analysis(self.model.backbone, self.ids))
        writer = tf.summary.create_file_writer(self.logdir)
        # Recorded whatever Keras' TensorBoard callback set for its own step summaries
        # (its record_if left every image out).
        with writer.as_default(), tf.summary.record_if(True):
            for name, figure in figures.items():
                image = tf.image.decode_png(plots.png_bytes(figure), channels=4)
                # On the epoch axis of the curves: TensorBoard's, from 0 as Keras writes it.
                tf.summary.image(name, image[None], step=epoch)
        writer.close()  # on disk before the epoch is committed


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
    A resumed run compares its first epoch with the last committed one.

    Args:
        run_state: the run's `RunState` (its committed history rows).
    """

    def __init__(self, run_state):
        super().__init__()
        self.run_state, self.previous = run_state, None

    def on_train_begin(self, logs=None):
        rows = self.run_state.rows
        self.previous = rows[-1].get("val_accuracy") if rows else None

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
