"""N sublayers of one configuration computed as one: DSAN's forward and backward blocks
(Im & Cho, 2017, Figure 2) run the same function of separate weights on the same words, so
the encoder computes them together (`DSANBlock.stacked_call`), their weights stacked on a
leading axis at run time and their activations [N, B, T, ...]. A compiled step then holds
the block's ops once, not once per direction (issue 48: a GPU's step is bound by the size
of its program); each layer keeps its own variables, so files and checkpoints are those of
separate layers. Dropout draws the N layers' masks at once.

Stacking each weight pair is a kernel of its own on a GPU (18 of the paper configuration's
229 a step), and each variable's Adam update another. Under `packed` (on JAX, when
`packing(True)` asks for it) the N layers' weights are read from one concatenation of all
of them, laid out so that each stacked weight is a contiguous slice: one kernel stacks them
all, and their gradients arrive as slices of one buffer, whose Adam updates XLA fuses by
shape (196 kernels a step of the 32-step scan instead of 229). Fewer kernels were not a
faster step: on an H200 the scan ran 1.448 ms a step packed against 1.350 stacked, so it is
off by default (docs/PERFORMANCE.md, "What a GPU runs").

Shape legend: N stacked layers, B batch, T tokens, D input width, E output width.
"""

import contextlib
import math

import keras
from keras import ops

from dsan_tf.layers.layer_norm import _layer_norm

# id(variable of the first layer) -> (ids of the N layers' variables, their values [N, ...]),
# while `packed` is active.
_PACKED = {}
# Whether `packing` asked for it (`packs`).
_ENABLED = [False]


def packs():
    """Whether `packed` packs here: on JAX within `packing(True)` only (A/Bs, kernel
    counts, tests). Only XLA on JAX can keep the concatenation whole (an optimization
    barrier). Measured slower by default: on an H200, 1.448 against 1.350 ms a step of the
    paper configuration's 32-step scan (2026-11-28, with slices before `jax.lax.split`);
    on JAX on a 2-core CPU, split: even to 5% faster (d_e 50 and 300)."""
    return keras.backend.backend() == "jax" and bool(_ENABLED[0])


@contextlib.contextmanager
def packing(enabled):
    """Within: `packed` packs on JAX (`enabled` True) or does not (False, None)."""
    before, _ENABLED[0] = _ENABLED[0], enabled
    try:
        yield
    finally:
        _ENABLED[0] = before


def _weight_groups(layers):
    """[(variables of the N layers at one place)], or None when the layers' float
    variables do not pair up by shape (layers of different configurations)."""
    lists = [[v for v in layer.weights if "float" in str(v.dtype)] for layer in layers]
    if len({len(variables) for variables in lists}) != 1:
        return None
    groups = list(zip(*lists))
    if any(len({tuple(v.shape) for v in group}) != 1 for group in groups):
        return None
    return groups


@contextlib.contextmanager
def packed(layers):
    """Within: `weights` (and so `dense`, `layer_norm`) of sublayers of these N built
    layers of one configuration read from one buffer of all their float variables, in the
    order [group 1 of layer 1..N, group 2 of layer 1..N, ...], where `packs()`; else a
    no-op. The values are the variables' own: the same numbers either way.

    Args:
        layers: N built layers of one configuration (e.g. DSAN's forward and backward
            blocks).
    """
    groups = _weight_groups(layers) if len(layers) > 1 and packs() else None
    if not groups:
        yield
        return
    import jax  # packs() is True on JAX only

    pieces = [ops.reshape(variable.value, (-1,)) for group in groups for variable in group]
    # Kept whole: left to XLA's simplifier, a slice of the concatenation becomes a
    # concatenation of its own again (255 kernels a step instead of 198).
    buffer = jax.lax.optimization_barrier(ops.concatenate(pieces))
    # One split, not a slice per weight: its gradient is one concatenation of the
    # weights' gradients, where slices' gradients are a padded buffer each, summed.
    sizes = [len(group) * math.prod(group[0].shape) for group in groups]
    stacked = {id(group[0]): (tuple(map(id, group)), ops.reshape(
        piece, (len(layers),) + tuple(group[0].shape)))
        for group, piece in zip(groups, jax.lax.split(buffer, sizes))}
    _PACKED.update(stacked)
    try:
        yield
    finally:
        for key in stacked:
            _PACKED.pop(key, None)


def _packed(layers, name):
    """`packed`'s [N, ...] slice of the variables `name` of `layers` (these variables, in
    this order), or None."""
    variables = tuple(id(getattr(layer, name)) for layer in layers)
    ids, value = _PACKED.get(variables[0], (None, None))
    return value if ids == variables else None


def weights(layers, name, dtype):
    """The variables `name` of `layers`, read in `dtype`: [N, ...] (a slice of `packed`'s
    buffer while one holds them)."""
    value = _packed(layers, name)
    if value is not None:
        return ops.cast(value, dtype)
    return ops.stack([ops.cast(getattr(layer, name).value, dtype) for layer in layers])


def dense(layers, inputs, shared=False):
    """N `keras.layers.Dense` layers of one configuration, each on its own inputs.

    Args:
        layers: N built Dense layers (same units, bias and activation).
        inputs: float [N, B, T, D], or [B, T, D] read by all N (`shared=True`): then one
            matmul with the kernels side by side.

    Returns:
        float [N, B, T, E] in the layers' compute dtype.
    """
    first = layers[0]
    dtype = first.compute_dtype
    inputs = ops.cast(inputs, dtype)
    if len(layers) == 1:  # one layer: the matmul of Dense's own call
        outputs = ops.matmul(inputs if shared else inputs[0],
                             ops.cast(first.kernel.value, dtype))[None]
    elif shared:
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        kernel = _packed(layers, "kernel")
        if kernel is not None:  # [N, D, E] -> [D, N·E]
            kernel = ops.reshape(ops.transpose(ops.cast(kernel, dtype), (1, 0, 2)),
                                 (kernel.shape[1], -1))
        else:
            kernel = ops.concatenate([ops.cast(layer.kernel.value, dtype)
                                      for layer in layers], axis=-1)
        outputs = ops.matmul(inputs, kernel)
        outputs = ops.reshape(outputs, (batch, length, len(layers), first.units))
        outputs = ops.transpose(outputs, (2, 0, 1, 3))
    else:
        shape = ops.shape(inputs)
        outputs = ops.matmul(ops.reshape(inputs, (len(layers), -1, inputs.shape[-1])),
                             weights(layers, "kernel", dtype))
        outputs = ops.reshape(outputs, (len(layers), shape[1], shape[2], first.units))
    if first.use_bias:
        outputs = outputs + weights(layers, "bias", dtype)[:, None, None, :]
    return first.activation(outputs) if first.activation is not None else outputs


def layer_norm(layers, inputs):
    """N `LayerNorm` layers, each on its slice of inputs [N, ..., D]; float32 inside,
    returned in the layers' compute dtype."""
    first = layers[0]
    shape = (len(layers),) + (1,) * (len(inputs.shape) - 2) + (inputs.shape[-1],)
    gamma = ops.reshape(weights(layers, "gamma", "float32"), shape)
    beta = ops.reshape(weights(layers, "beta", "float32"), shape)
    outputs = _layer_norm(ops.cast(inputs, "float32"), gamma, beta, first.epsilon)
    return ops.cast(outputs, first.compute_dtype)


def dropout(layers, inputs, training=None):
    """N `keras.layers.Dropout` layers of one rate on inputs [N, ...], as one draw of the
    first layer's seed generator: one mask op for all N (slicing per layer, so that each
    drew its own, cost TensorFlow's CPU step 5% at d_e 50)."""
    return layers[0](inputs, training=training)
