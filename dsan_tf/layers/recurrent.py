"""A bidirectional LSTM that loads back whole from a `.keras` file (AF-DMN's encoder and
fusion; any family that reads sentences with LSTMs).

Shape legend: B batch, T tokens, U units per direction.
"""

from dsan_tf.common import keras_private
from dsan_tf.common.frameworks import keras


def bidirectional_lstm(units, name, dtype, kernel_initializer, recurrent_initializer):
    """`keras.layers.Bidirectional` over an LSTM returning every step, [B, T, 2·U].

    `Bidirectional` makes its two LSTMs by serializing the one it is given; made while a
    file loads, Keras' sharing of objects by `id()` now and then gave the forward LSTM back
    as an earlier backward one (go_backwards True, and Keras refused to load the file), so
    it is made with that sharing off (`keras_private.no_object_sharing`).

    Args:
        units: int, U.
        name: the layer's name.
        dtype: its dtype policy.
        kernel_initializer, recurrent_initializer: the input and recurrent kernels'
            initializers (the backward LSTM gets copies from the forward one's config).

    Returns:
        `keras.layers.Bidirectional`.

    Examples:
    ```python
    from dsan_tf.layers.recurrent import bidirectional_lstm

    layer = bidirectional_lstm(8, "encoder", "float32", "glorot_uniform", "orthogonal")
    ```
    """
    with keras_private.no_object_sharing():
        return keras.layers.Bidirectional(
            keras.layers.LSTM(units, return_sequences=True, dtype=dtype,
                              kernel_initializer=kernel_initializer,
                              recurrent_initializer=recurrent_initializer),
            name=name, dtype=dtype)
