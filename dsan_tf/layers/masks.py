"""Attention masks of the DSAN paper (Im & Cho, 2017, Section 4.2.2, Figures 3 and 4).

Shape legend: T tokens (sequence length). A query position is a row i, a key position
is a column j.

The masks depend on the sequence length only, so they are built once per call for a
[T, T] grid and broadcast over the batch and the heads by the attention layer.
"""

import warnings

from dsan_tf.common.frameworks import ops

DIRECTIONS = ("forward", "backward")
# The token id of padding, for every model and vocabulary (`dsan_tf.data.Vocabulary`
# numbers its words from 2; 1 is the unknown word). Defined here, not in the data
# package, so that the models need neither it nor TensorFlow.
PAD_ID = 0


def padding_mask(token_ids):
    """Which tokens are real: bool [B, T] of int token ids [B, T] (padding is `PAD_ID`)."""
    return ops.not_equal(token_ids, PAD_ID)


def _grid(length):
    positions = ops.arange(length, dtype="int32")
    return ops.expand_dims(positions, 1), ops.expand_dims(positions, 0)


def directional_mask(length, direction):
    """Directional mask M_dir as a boolean visibility grid.

    The paper adds M_dir = -inf to the logits where a key may not be attended to; here
    `True` means "may attend". The diagonal is never visible in either direction: a
    token's own content reaches the block output through the fusion gate instead.

    Args:
        length: int or scalar tensor, T.
        direction: `"forward"` (key j visible to query i only when j < i) or
            `"backward"` (only when j > i).

    Returns:
        bool tensor [T, T].
    """
    if direction not in DIRECTIONS:
        raise ValueError(
            f"direction must be one of {DIRECTIONS}, got {direction!r}."
        )
    rows, cols = _grid(length)
    if direction == "forward":
        return ops.less(cols, rows)
    return ops.greater(cols, rows)


def off_diagonal_mask(length):
    """Visibility grid with only the diagonal masked (direction masks switched off).

    Returns:
        bool tensor [T, T], `True` everywhere except on the diagonal.
    """
    rows, cols = _grid(length)
    return ops.not_equal(rows, cols)


def distances(length):
    """Query-key distances |i - j|, the input of every distance prior.

    Args:
        length: int or scalar tensor, T.

    Returns:
        int32 tensor [T, T].
    """
    rows, cols = _grid(length)
    return ops.abs(rows - cols)


def distance_mask(length):
    """Distance mask M_dis[i, j] = -|i - j| (the paper's Figure 4, before scaling by alpha).

    Args:
        length: int or scalar tensor, T.

    Returns:
        float32 tensor [T, T].
    """
    return ops.cast(ops.negative(distances(length)), "float32")


__all__ = ["directional_mask", "distance_mask", "distances", "off_diagonal_mask", "DIRECTIONS", "LARGE_NEGATIVE"]

# Added to the logits of masked keys before the softmax, which is computed in float32.
# Finite (unlike -inf) so that a row with no visible key cannot produce NaN.
LARGE_NEGATIVE = -1e9


def softmax(logits, axis=-1):
    """`keras.ops.softmax` without its warning about an axis of size 1: over the keys of a
    one-word sentence (or its one token, when pooling) a softmax of one value is correct,
    and the warning would reach every user who classifies a one-word sentence."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using a softmax over axis")
        return ops.softmax(logits, axis=axis)
