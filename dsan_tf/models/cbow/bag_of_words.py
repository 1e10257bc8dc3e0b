"""Continuous bag-of-words sentence encoder: the CBOW baseline of the paper's Table 2.

Shape legend: B batch, T tokens, D word width.
"""

from dsan_tf.common.frameworks import keras, ops


@keras.saving.register_keras_serializable(package="dsan_tf")
class BagOfWordsEncoder(keras.layers.Layer):
    """Mean of the word vectors of the real tokens (padding excluded; empty sentence -> 0).

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T].

    Returns:
        float [B, D].
    """

    def call(self, inputs, padding_mask=None, training=None):
        if padding_mask is None:
            return ops.mean(inputs, axis=1)
        weights = ops.cast(padding_mask, inputs.dtype)[:, :, None]
        total = ops.sum(inputs * weights, axis=1)
        return total / ops.maximum(ops.sum(weights, axis=1), 1.0)

    def output_dim(self, input_dim):
        return input_dim

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])
