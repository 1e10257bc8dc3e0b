"""Small helpers shared by the layers."""

import keras


def clone_initializer(initializer):
    """A fresh initializer with the same configuration.

    Sharing one seeded initializer instance between sublayers would give them identical
    starting weights; each sublayer gets its own copy instead.
    """
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())
