"""Adam and AdamW with one update op per variable on TensorFlow, and, when asked, the
whole model's moments updated as one vector.

Keras' Adam writes about 41 graph ops a variable for every step on TensorFlow: the step's
powers of β₁ and β₂ recomputed for each variable, then m, v and the variable updated op
by op. DSAN has 67 to 133 variables, so the optimizer made 2,755 of the demo training
step's ops and 1.9 s of its tracing (issue 48). These classes compute the step's scalars
once and update each variable with TensorFlow's fused `ResourceApplyAdam` kernel (the same
formula: Kingma & Ba, 2015, Algorithm 1 with ε outside the square root): 687 ops, traced in
0.3 s, and the same weights (measured: `tests/test_optimizers.py`).

With `flat_moments=True` they keep Adam's moments m and v as one flat vector each, so
that m and v of every weight update in one elementwise computation (issue 48: a GPU's step
is bound by its kernels, not their arithmetic). The numbers are Keras' to the bit, and
files keep Keras' layout, a moment a variable. It is off unless asked: compiled by XLA
for an H100 (`experiments.program_size --gpu_kernels`), the paper configuration's step
launches 229 kernels with Keras' update and 189 with flat moments, but at d_e 50 (the
study's setting) several steps as one scan launch 228 and 263; how long either runs on a
GPU is not measured yet (docs/PERFORMANCE.md, "What a GPU runs").

Otherwise Keras' own update runs: on JAX and PyTorch, under a `tf.distribute` strategy
(its variables update per replica), with AMSGrad, and for a sparse gradient
(`tf.IndexedSlices`, a trained embedding's), where Keras squares each slice rather than
their sum: kept so that trained-embedding runs give the numbers they gave before.
"""

import warnings

import keras
import numpy as np
from keras import ops


class _OneOpPerVariable:
    """The fused update, mixed into a Keras Adam (or a subclass of it)."""

    def apply(self, grads, trainable_variables=None):
        self._step_powers = None  # a new step: its β powers are computed once, below
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self._step_powers = None

    def _fused(self, gradient):
        if keras.backend.backend() != "tensorflow" or self.amsgrad:
            return False
        import tensorflow as tf  # the backend: loaded already

        return not tf.distribute.has_strategy() and not isinstance(gradient, tf.IndexedSlices)

    def update_step(self, gradient, variable, learning_rate):
        if not self._fused(gradient):
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        dtype = variable.dtype
        if getattr(self, "_step_powers", None) is None:
            step = ops.cast(self.iterations + 1, "float32")
            self._step_powers = (ops.power(ops.cast(self.beta_1, "float32"), step),
                                 ops.power(ops.cast(self.beta_2, "float32"), step))
        index = self._get_variable_index(variable)
        cast = lambda value: tf.cast(value, dtype)  # noqa: E731
        beta_1_power, beta_2_power = self._step_powers
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle, beta1_power=cast(beta_1_power),
            beta2_power=cast(beta_2_power), lr=cast(learning_rate), beta1=cast(self.beta_1),
            beta2=cast(self.beta_2), epsilon=cast(self.epsilon), grad=cast(gradient))


class _FlatMoments:
    """Adam's m and v as one flat vector each, mixed into a Keras Adam (or a subclass).

    Args:
        flat_moments: keep them so (True), or a moment a variable as Keras does (False).
            Never under a Keras distribution or a `tf.distribute` strategy, with AMSGrad,
            or with variables of mixed dtypes: there Keras' own update runs.
    """

    def __init__(self, *args, flat_moments=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.flat_moments = flat_moments
        self._offsets = None  # [(start, size)] a variable, where the moments are flat

    def _flat_applies(self, variables):
        if (not self.flat_moments or self.amsgrad
                or keras.distribution.distribution() is not None):
            return False
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            if tf.distribute.has_strategy():
                return False
        return len({v.dtype for v in variables}) == 1 and not any(
            self._overwrite_variable_with_gradient(v) for v in variables)

    def build(self, var_list):
        if self.built:
            return
        if not self._flat_applies(var_list):
            return super().build(var_list)
        # The base optimizer's build (step count, EMA, accumulators), not Adam's slots.
        super(keras.optimizers.Adam, self).build(var_list)
        sizes = [int(np.prod(v.shape)) for v in var_list]
        self._offsets = list(zip(np.cumsum([0] + sizes[:-1]).tolist(), sizes))
        dtype = var_list[0].dtype if var_list else None
        self._flat_momentum, self._flat_velocity = (
            self.add_variable((sum(sizes),), dtype=dtype, name=name)
            for name in ("momentum", "velocity"))

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if self._offsets is None:
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        order = [self._get_variable_index(v) for v in trainable_variables]
        if sorted(order) != list(range(len(self._offsets))):
            # Some gradients were empty (filtered out): their weights and moments stay.
            return self._update_some(grads, trainable_variables, learning_rate, order)
        _, grads, variables = zip(*sorted(zip(order, grads, trainable_variables),
                                          key=lambda triple: triple[0]))
        dtype = variables[0].dtype
        gradient = ops.concatenate([ops.reshape(ops.cast(g, dtype), (-1,)) for g in grads])
        if keras.backend.backend() == "jax":
            import jax  # the backend: loaded already

            # The concatenation as a kernel of its own: left to XLA's fusion, it is merged
            # with the gradients' last ops, which took XLA's GPU fusion 5 s longer to
            # decide and launched 5 kernels more (docs/PERFORMANCE.md).
            gradient = jax.lax.optimization_barrier(gradient)
        m, v, step = self._adam(gradient, self._flat_momentum.value,
                                self._flat_velocity.value, learning_rate, dtype)
        self.assign(self._flat_momentum, m)
        self.assign(self._flat_velocity, v)
        for variable, (start, size) in zip(variables, self._offsets):
            self.assign_sub(variable, ops.reshape(step[start:start + size], variable.shape))

    def _adam(self, gradient, m, v, learning_rate, dtype):
        """Keras' Adam update, op for op: (new m, new v, the step to subtract)."""
        lr = ops.cast(learning_rate, dtype)
        local_step = ops.cast(self.iterations + 1, dtype)
        beta_1_power = ops.power(ops.cast(self.beta_1, dtype), local_step)
        beta_2_power = ops.power(ops.cast(self.beta_2, dtype), local_step)
        alpha = lr * ops.sqrt(1 - beta_2_power) / (1 - beta_1_power)
        m = ops.add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        v = ops.add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        return m, v, ops.divide(ops.multiply(m, alpha), ops.add(ops.sqrt(v), self.epsilon))

    def _update_some(self, grads, variables, learning_rate, order):
        """The weights that have a gradient, each on its part of m and v."""
        m_all, v_all = self._flat_momentum.value, self._flat_velocity.value
        for gradient, variable, index in zip(grads, variables, order):
            start, size = self._offsets[index]
            m, v, step = self._adam(
                ops.reshape(ops.cast(gradient, variable.dtype), (-1,)),
                m_all[start:start + size], v_all[start:start + size], learning_rate,
                variable.dtype)
            m_all = ops.slice_update(m_all, (start,), m)
            v_all = ops.slice_update(v_all, (start,), v)
            self.assign_sub(variable, ops.reshape(step, variable.shape))
        self.assign(self._flat_momentum, m_all)
        self.assign(self._flat_velocity, v_all)

    def save_own_variables(self, store):
        """Keras' layout: the base optimizer's variables, then m and v of each weight."""
        if self._offsets is None:
            return super().save_own_variables(store)
        for i, value in enumerate(self._keras_layout()):
            store[str(i)] = value

    def load_own_variables(self, store):
        if self._offsets is None:
            return super().load_own_variables(store)
        base = self.variables[:-2]
        if len(store.keys()) != len(base) + 2 * len(self._offsets):
            warnings.warn(f"Skipping variable loading for optimizer '{self.name}', because "
                          f"it has {len(base) + 2 * len(self._offsets)} variables in "
                          f"Keras' layout whereas the saved optimizer has "
                          f"{len(store.keys())} variables.", stacklevel=2)
            return
        for i, variable in enumerate(base):
            variable.assign(store[str(i)])
        for k, moment in enumerate((self._flat_momentum, self._flat_velocity)):
            moment.assign(np.concatenate([
                np.reshape(store[str(len(base) + 2 * j + k)], (-1,))
                for j in range(len(self._offsets))]))

    def _keras_layout(self):
        values = [ops.convert_to_numpy(v.value) for v in self.variables[:-2]]
        m, v = (ops.convert_to_numpy(x.value) for x in (self._flat_momentum,
                                                        self._flat_velocity))
        for variable, (start, size) in zip(self._trainable_variables, self._offsets):
            values += [m[start:start + size].reshape(variable.shape),
                       v[start:start + size].reshape(variable.shape)]
        return values

    def get_config(self):
        return {**super().get_config(), "flat_moments": self.flat_moments}


@keras.saving.register_keras_serializable(package="dsan_tf")
class Adam(_FlatMoments, _OneOpPerVariable, keras.optimizers.Adam):
    """`keras.optimizers.Adam`, with one fused update op per variable on TensorFlow, or
    one update for all variables (`flat_moments=True`)."""


@keras.saving.register_keras_serializable(package="dsan_tf")
class AdamW(_FlatMoments, _OneOpPerVariable, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` (decoupled weight decay, applied by Keras before the
    update), with one fused update op per variable on TensorFlow, or one update for all
    variables (`flat_moments=True`)."""


def with_flat_moments(optimizer):
    """A fresh copy of `optimizer` (one of these classes: its learning rate or schedule,
    its decay) with flat moments."""
    return type(optimizer).from_config({**optimizer.get_config(), "flat_moments": True})
