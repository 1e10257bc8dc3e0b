"""The masks are the paper's Figures 3 and 4."""

import numpy as np
import pytest

from dsan_tf.layers import masks

# Figure 3 as visibility (True = the -inf cell is absent): forward attends to earlier words.
FORWARD_T5 = np.array([
    [0, 0, 0, 0, 0],
    [1, 0, 0, 0, 0],
    [1, 1, 0, 0, 0],
    [1, 1, 1, 0, 0],
    [1, 1, 1, 1, 0],
], dtype=bool)

DISTANCE_T5 = -np.array([
    [0, 1, 2, 3, 4],
    [1, 0, 1, 2, 3],
    [2, 1, 0, 1, 2],
    [3, 2, 1, 0, 1],
    [4, 3, 2, 1, 0],
], dtype=np.float32)


def test_forward_mask_is_figure_3():
    np.testing.assert_array_equal(np.asarray(masks.directional_mask(5, "forward")), FORWARD_T5)


def test_backward_mask_is_figure_3_transposed():
    np.testing.assert_array_equal(np.asarray(masks.directional_mask(5, "backward")),
                                  FORWARD_T5.T)


def test_diagonal_never_visible():
    for direction in masks.DIRECTIONS:
        assert not np.diag(np.asarray(masks.directional_mask(7, direction))).any()
    off = np.asarray(masks.off_diagonal_mask(4))
    np.testing.assert_array_equal(off, ~np.eye(4, dtype=bool))


def test_distance_mask_is_figure_4():
    result = np.asarray(masks.distance_mask(5))
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, DISTANCE_T5)


def test_unknown_direction_is_a_clear_error():
    with pytest.raises(ValueError, match="direction must be one of"):
        masks.directional_mask(3, "sideways")
