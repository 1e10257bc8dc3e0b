"""Small helpers shared by the layers."""

import zlib

import keras


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
