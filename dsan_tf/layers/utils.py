"""Small helpers shared by the layers."""

import math
import zlib

from dsan_tf.common.frameworks import keras

from dsan_tf.common.choices import INITIALIZATIONS


def clone_initializer(initializer, salt):
    """A fresh initializer with the same configuration, for the sublayer named `salt`.

    A seeded Keras initializer draws the same values at every call, so sublayers sharing
    one (or exact copies of one) would start identical: W^Q = W^K = W^V. A seeded
    initializer's clone therefore gets a seed derived from the seed and `salt`, so each
    sublayer starts differently and the same seed still builds the same model. Composite
    layers pass their sublayers a clone salted with the sublayer's name, so the seeds
    follow the path of names down the layer tree (forward_block/masked_attention/query).
    """
    initializer = keras.initializers.get(initializer)
    config = initializer.get_config()
    if isinstance(config.get("seed"), int):
        config["seed"] = zlib.crc32(f"{config['seed']}/{salt}".encode()) & 0x7FFFFFFF
    return initializer.__class__.from_config(config)


def dense_initializers(initialization, kernel_initializer, salt, fan_in, normal_std=None):
    """(kernel, bias) initializers of the Dense sublayer named `salt` that reads `fan_in`
    features.

    `initialization="glorot"`: `clone_initializer(kernel_initializer, salt)` and zero
    biases. `"san4nli"` (SAN4NLI-pytorch's): N(0, normal_std²) kernels where `normal_std`
    is given (its Xavier-normal tensors), otherwise PyTorch's `nn.Linear` default,
    U(±1/√fan_in) for the kernel (kaiming_uniform with a = √5) and for the bias. Seeds
    follow `kernel_initializer`'s (salted by `salt`), unseeded when it is.
    """
    if initialization not in INITIALIZATIONS:
        raise ValueError(f"initialization must be one of {INITIALIZATIONS}, "
                         f"got {initialization!r}.")
    if initialization == "glorot":
        return clone_initializer(kernel_initializer, salt), "zeros"
    seed = keras.initializers.get(kernel_initializer).get_config().get("seed")
    seed = seed if isinstance(seed, int) else None
    limit = 1.0 / math.sqrt(fan_in)
    kernel = (keras.initializers.RandomNormal(stddev=normal_std, seed=seed) if normal_std
              else keras.initializers.RandomUniform(-limit, limit, seed=seed))
    bias = keras.initializers.RandomUniform(-limit, limit, seed=seed)
    return clone_initializer(kernel, salt), clone_initializer(bias, f"{salt}/bias")


def initialized_dense(units, name, layer, fan_in, use_bias=True, normal_std=None,
                      activation=None, dtype=None):
    """A `keras.layers.Dense` sublayer `name` of `layer`, started as `layer.initialization`
    and `layer.kernel_initializer` say (`dense_initializers`), in `layer`'s dtype policy
    unless `dtype` is given."""
    kernel, bias = dense_initializers(layer.initialization, layer.kernel_initializer, name,
                                      fan_in, normal_std)
    return keras.layers.Dense(units, use_bias=use_bias, activation=activation, name=name,
                              dtype=dtype or layer.dtype_policy, kernel_initializer=kernel,
                              bias_initializer=bias)
