"""How a model is trained, on any Keras backend: the loss, metric and optimizer of the
papers, and whether the step is compiled (XLA on TensorFlow and JAX, `torch.compile` on
PyTorch). Needs Keras only, not TensorFlow.
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.layers import DistancePrior
from dsan_tf.models import optimizers
from dsan_tf.common import keras_private

# Whether compiling the training step pays, per backend, measured on CPU (docs/BACKENDS.md):
# TensorFlow runs its graph faster than XLA's code here; Keras runs a JAX
# model eagerly, op by op, unless it is jitted (about 15 times slower on the demo);
# `torch.compile` spends minutes compiling each new batch shape.
JIT_COMPILE_BY_BACKEND = {"tensorflow": False, "jax": True, "torch": False}


def default_jit_compile(backend=None):
    """Whether to compile the training step on `backend` (the current Keras backend when
    None), when the user did not say."""
    return JIT_COMPILE_BY_BACKEND.get(backend or keras.backend.backend(), False)


def make_optimizer(training, batch_size, model, train_size=None):
    """Adam, or AdamW(R): decoupled weight decay λ_norm·sqrt(b / (B·T)) (Loshchilov &
    Hutter 2017, normalized weight decay) and, with `restart_epochs` = T, a cosine
    learning rate from `learning_rate` down to `min_learning_rate` over T epochs,
    restarted at the top every T epochs. The distance priors' w and b are not decayed:
    decay would pull w towards its floor and flatten the prior.

    An epoch is `training.epoch_steps` steps: one pass over the data, or
    `schedule_epoch_pairs` pairs, which B then counts (a schedule carried by examples).

    Args:
        training: `dsan_tf.core.config.TrainingConfig`.
        batch_size: b, pairs per step.
        model: the model whose weights it will train.
        train_size: training pairs (restarts and normalized weight decay need it).
    """
    epoch_steps = training.epoch_steps(batch_size, train_size)
    epoch_pairs = training.schedule_epoch_pairs or train_size
    needs_size = training.restart_epochs or (training.optimizer == "adamw" and
                                             training.normalized_weight_decay)
    if needs_size and not (epoch_steps and epoch_pairs):
        raise ValueError("learning-rate restarts and normalized weight decay need the "
                         "number of training pairs (train_size).")
    rate = training.learning_rate
    if training.restart_epochs:
        rate = keras.optimizers.schedules.CosineDecayRestarts(
            training.learning_rate, first_decay_steps=training.restart_epochs * epoch_steps,
            t_mul=1.0, m_mul=1.0, alpha=training.min_learning_rate / training.learning_rate)
    if training.optimizer == "adam":
        return optimizers.Adam(rate)
    cycle = training.restart_epochs or training.epochs
    decay = (training.normalized_weight_decay * (batch_size / (epoch_pairs * cycle)) ** 0.5
             if training.normalized_weight_decay else 0.0)
    # Keras multiplies the decay by the current learning rate; AdamW's decay follows
    # the schedule's multiplier only, so divide by the top rate.
    optimizer = optimizers.AdamW(rate, weight_decay=decay / training.learning_rate)
    optimizer.exclude_from_weight_decay(var_list=[
        weight for layer in keras_private.flatten_layers(model)
        if isinstance(layer, DistancePrior)
        for weight in layer.trainable_weights])
    return optimizer
