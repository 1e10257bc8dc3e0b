"""Training on an encoded setting (`dsan_tf.training.setting`) with Keras and NumPy alone: the
road to a GPU machine that has JAX or PyTorch and no TensorFlow. The same model, batches
(`NLIBatches`, bounded shapes where the step is compiled), optimiser and early stopping on
dev accuracy as `dsan_tf.training.steps`, without the run directory, TensorBoard or export
(those need TensorFlow); it returns a record of what it measured.
"""

import statistics
import time

import keras
import numpy as np

from dsan_tf.core.task import NLITask
from dsan_tf.speed import compilation, sentence_programs


class _EpochTimes(keras.callbacks.Callback):
    """Records each epoch's seconds (dev pass included) and metrics, and prints a line."""

    def __init__(self, log):
        super().__init__()
        self.log, self.epochs = log, []

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": epoch + 1, "seconds": time.perf_counter() - self._started,
               **{key: float(value) for key, value in (logs or {}).items()}}
        self.epochs.append(row)
        self.log(f"epoch {epoch + 1}: " + ", ".join(
            f"{key} {value:.4f}" for key, value in row.items() if key not in ("epoch",
                                                                               "seconds"))
                 + f" ({row['seconds']:.1f} s)")


def device_name():
    """The device Keras computes on, in words (JAX's or PyTorch's name for it)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax  # the backend: loaded already

        device = jax.devices()[0]
        return f"jax {device.platform}: {getattr(device, 'device_kind', device)}"
    if backend == "torch":
        import torch  # the backend: loaded already

        return f"torch: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() \
            else "torch: cpu"
    return backend


def train_encoded(setting, epochs=None, patience=None, log=print):
    """Trains `setting.config` on `setting` (`EncodedSetting`) as `setting.policy` says
    (resolved here: compiled steps and shapes, compile-ahead, JAX's compilation cache);
    keeps the best dev epoch's weights.

    Args:
        setting: `EncodedSetting` with "train" and "dev" splits.
        epochs, patience: override the configuration's (`TrainingConfig`).
        log: called with each line of text.

    The configuration's `mixed_precision` is Keras' dtype policy during the run (the
    caller's policy is put back after).

    Returns:
        A dict: backend, device, dtype policy, batches (padding, shapes), compile-ahead
        seconds, the epochs (seconds, metrics), the best epoch and its dev accuracy, and
        training pairs per second of the median epoch (its dev pass included).
    """
    # The configuration's precision (the training program sets it in `steps.set_up`),
    # for this run only: Keras' dtype policy is global, and the caller's comes back after.
    outer = keras.config.dtype_policy()
    if setting.config.training.mixed_precision != "none":
        keras.config.set_dtype_policy(setting.config.training.mixed_precision)
    try:
        return _train(setting, epochs, patience, log)
    finally:
        keras.config.set_dtype_policy(outer)


def _train(setting, epochs, patience, log):
    config = setting.config
    training = config.training
    epochs = epochs or training.epochs
    patience = training.patience if patience is None else patience
    keras.utils.set_random_seed(config.data.seed)
    task = NLITask(config, setting.policy, log=log)
    if task.policy.compilation_cache:
        compilation.enable_jax_cache(config.data.embeddings_cache_dir)
    train_pairs, dev_pairs = setting.splits["train"], setting.splits["dev"]
    train = task.build_inputs(train_pairs, training=True)
    dev = task.build_inputs(dev_pairs, shapes=train.shapes)
    record = {"backend": keras.backend.backend(), "device": device_name(),
              "policy": task.policy.to_dict(),
              "dtype_policy": keras.config.dtype_policy().name,
              "train_pairs": len(train_pairs), "dev_pairs": len(dev_pairs),
              "batches": {"train": train.summary(), "dev": dev.summary(),
                          "shapes": train.shapes.describe(),
                          "chosen": train.shapes.chosen}}
    log(f"{record['device']}; {record['dtype_policy']}; {task.policy.describe()}; "
        f"training batches: {record['batches']['train']}; dev batches: "
        f"{record['batches']['dev']}")
    model = task.compile(task.build_model(setting.vocabulary_size, setting.word_vectors),
                         train_size=len(train_pairs))
    record["sentence_programs"] = sentence_programs.applies(model)  # JAX on a CPU
    if task.policy.compile_ahead:
        ahead = compilation.compile_ahead(model, train, dev)
        record["compile_ahead"] = ahead
        log(f"compiled {ahead['train_shapes']} training and {ahead['dev_shapes']} evaluation "
            f"shape(s) ahead in {ahead['seconds']:.1f} s")
    record.update(_fit(model, train, dev, epochs, patience, log))
    record["train_pairs_per_second"] = len(train_pairs) / record["median_epoch_seconds"]
    return record


def _fit(model, train, dev, epochs, patience, log):
    """Trains with early stopping on dev accuracy, the best epoch's weights kept; returns
    the epochs, the best epoch, its dev accuracy and the median epoch's seconds."""
    times = _EpochTimes(log)
    callbacks = [times]
    if patience:
        callbacks.append(keras.callbacks.EarlyStopping(
            monitor="val_accuracy", mode="max", patience=patience, restore_best_weights=True))
    model.fit(train, validation_data=dev, epochs=epochs, shuffle=False, verbose=0,
              callbacks=callbacks)
    accuracies = [row["val_accuracy"] for row in times.epochs]
    return {"epochs": times.epochs, "best_epoch": int(np.argmax(accuracies)) + 1,
            "dev_accuracy": float(model.evaluate(dev, verbose=0,
                                                 return_dict=True)["accuracy"]),
            "median_epoch_seconds": statistics.median(row["seconds"] for row in times.epochs)}
