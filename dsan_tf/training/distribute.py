"""tf.distribute strategies for training, and the one training loop `model.fit` cannot serve.

`--strategy`:
    default       one device (TF places ops on a GPU when there is one).
    mirrored      every local GPU (or, without GPUs, every logical CPU: see --logical_cpus).
    multi_worker  MultiWorkerMirroredStrategy across machines described by TF_CONFIG.
    tpu           TPUStrategy on --tpu (a Cloud TPU name or address; empty: this VM's TPU).

--batch_size is the global batch: each of R replicas gets batch_size / R pairs per step.

`model.fit` under MultiWorkerMirroredStrategy fails in Keras 3 ("Attempt to convert a value
(PerReplica...) to a Tensor", keras-team/keras#20585), so `fit_multi_worker` trains with
`strategy.run` inside a `tf.function` instead, with the same model, optimizer, datasets and
Keras callbacks (history, best model, TensorBoard, the run's record of each epoch).

Under JAX, `mirrored` is Keras' own `keras.distribution.DataParallel` over every local
device (GPUs, or the logical CPUs of --logical_cpus): the same global batch split the same
way. `multi_worker` and `tpu` are tf.distribute's and need the TensorFlow backend.
"""

import contextlib
import json
import os

import keras

from dsan_tf.common.errors import UsageError

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


class KerasDistribution:
    """What training needs of a strategy (`scope`, `num_replicas_in_sync`) for a Keras
    distribution (JAX): the distribution is set globally, so the scope does nothing."""

    def __init__(self, distribution=None):
        self.num_replicas_in_sync = 1
        if distribution is not None:
            keras.distribution.set_distribution(distribution)
            self.num_replicas_in_sync = int(distribution.device_mesh.devices.size)

    def scope(self):
        return contextlib.nullcontext()


def split_cpu(count):
    """Makes `count` logical CPU devices; must run before TensorFlow (or JAX) touches a
    device."""
    if keras.backend.backend() == "jax":
        # JAX reads it when it first lists its devices.
        flag = f"--xla_force_host_platform_device_count={count}"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
        return
    if count > 1:
        import tensorflow as tf  # the backend

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def make_strategy(name, tpu=""):
    """The tf.distribute strategy `name` (one of STRATEGIES), or under JAX its Keras
    counterpart; a setup error raises `UsageError` with one sentence."""
    backend = keras.backend.backend()
    if backend != "tensorflow":
        return _keras_distribution(name, backend)
    import tensorflow as tf  # the backend

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if tf.config.list_logical_devices("GPU"):
            return tf.distribute.MirroredStrategy()
        cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=cpus)
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise UsageError("strategy=multi_worker needs the TF_CONFIG environment "
                             "variable (cluster and task of each worker; see docs/TRAINING.md).",
                             fields=("strategy",))
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, tf.errors.OpError) as error:
            raise UsageError(f"strategy=tpu: no TPU found at tpu={tpu!r} "
                             f"({str(error).splitlines()[0]}).",
                             fields=("strategy", "tpu")) from None
        return tf.distribute.TPUStrategy(resolver)
    raise UsageError(f"strategy must be one of {STRATEGIES}, got {name!r}.",
                     fields=("strategy",))


def _keras_distribution(name, backend):
    """`default` and, under JAX, `mirrored` (DataParallel over every local device)."""
    if name == "default":
        return KerasDistribution()
    if name == "mirrored" and backend == "jax":
        try:
            devices = keras.distribution.list_devices("gpu")
        except RuntimeError:  # JAX has no GPU backend here
            devices = []
        devices = devices or keras.distribution.list_devices("cpu")
        return KerasDistribution(keras.distribution.DataParallel(devices=devices))
    raise UsageError(f"strategy={name} needs KERAS_BACKEND=tensorflow (now {backend}); "
                     "under JAX, strategy=mirrored trains on every local device.",
                     fields=("strategy",))


def worker_dir(workdir):
    """Where this process writes its run directory: the workdir for the chief (or a
    single process), WORKDIR/worker<i> for another worker. The workers hold identical
    weights; their own files let them be compared, and nobody overwrites the chief's."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task, cluster = config.get("task", {}), config.get("cluster", {})
    chief = (not task or task.get("type") == "chief"
             or (task.get("type") == "worker" and task.get("index") == 0
                 and "chief" not in cluster))
    return workdir if chief else os.path.join(workdir, f"{task.get('type')}{task.get('index')}")


def fit_multi_worker(model, strategy, train_ds, dev_ds, initial_epoch, epochs, callbacks):
    """Trains `model` (compiled in `strategy.scope()`) like `model.fit` would, from epoch
    `initial_epoch` (the epochs a resumed run has done: its `RunState`, among the
    callbacks, restored the model and commits each epoch).

    Every step averages the loss over the global batch exactly (also for a partial last
    batch); the callbacks see the same logs as under `fit` (loss, accuracy, val_loss,
    val_accuracy).

    Returns:
        the per-epoch logs (a list of dicts).
    """
    import tensorflow as tf  # tf.distribute's: the backend

    train_dist = strategy.experimental_distribute_dataset(train_ds)
    dev_dist = strategy.experimental_distribute_dataset(dev_ds)
    train_step, eval_step = _steps(model, strategy, train_dist, dev_dist)
    callback_list = keras.callbacks.CallbackList(callbacks, model=model)
    callback_list.on_train_begin()
    history = []
    for epoch in range(initial_epoch, epochs):
        callback_list.on_epoch_begin(epoch)
        totals = tf.zeros(3)
        for batch_index, batch in enumerate(train_dist):
            callback_list.on_train_batch_begin(batch_index)
            totals += tf.stack(train_step(batch))
            loss, correct, count = totals.numpy()
            callback_list.on_train_batch_end(
                batch_index, {"loss": loss / count, "accuracy": correct / count})
            if model.stop_training:
                break
        dev = sum(tf.stack(eval_step(batch)) for batch in dev_dist).numpy()
        logs = {"loss": float(loss / count), "accuracy": float(correct / count),
                "val_loss": float(dev[0] / dev[2]), "val_accuracy": float(dev[1] / dev[2])}
        callback_list.on_epoch_end(epoch, logs)
        history.append(logs)
        if model.stop_training:
            break
    callback_list.on_train_end()
    return history


def _steps(model, strategy, train_dist, dev_dist):
    """The distributed training and evaluation steps: (loss sum, correct, count) each."""
    import tensorflow as tf  # tf.distribute's: the backend

    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                             reduction=None)
    optimizer = model.optimizer

    def sums(inputs, labels, training):
        logits = model(inputs, training=training)
        losses = per_example(labels, logits)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=labels.dtype), labels),
                          tf.float32)
        count = tf.cast(tf.shape(labels)[0], tf.float32)
        return tf.reduce_sum(losses), tf.reduce_sum(correct), count

    def train_replica(inputs, labels):
        context = tf.distribute.get_replica_context()
        with tf.GradientTape() as tape:
            loss_sum, correct, count = sums(inputs, labels, training=True)
            # The mean over the global batch: every replica divides by the global count.
            global_count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
            loss = optimizer.scale_loss(loss_sum / global_count)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss_sum, correct, count

    def reduce(values):
        return [strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for v in values]

    @tf.function(input_signature=[train_dist.element_spec])
    def train_step(batch):
        return reduce(strategy.run(train_replica, args=batch))

    @tf.function(input_signature=[dev_dist.element_spec])
    def eval_step(batch):
        return reduce(strategy.run(lambda x, y: sums(x, y, training=False), args=batch))

    return train_step, eval_step
