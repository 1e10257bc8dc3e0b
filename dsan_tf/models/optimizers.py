"""Adam and AdamW with one update op per variable on TensorFlow.

Keras' Adam writes about 41 graph ops a variable for every step on TensorFlow: the step's
powers of β₁ and β₂ recomputed for each variable, then m, v and the variable updated op
by op. DSAN has 67 to 133 variables, so the optimizer made 2,755 of the demo training
step's ops and 1.9 s of its tracing. These classes compute the step's scalars
once and update each variable with TensorFlow's fused `ResourceApplyAdam` kernel (the same
formula: Kingma & Ba, 2015, Algorithm 1 with ε outside the square root): 687 ops, traced in
0.3 s, and the same weights (measured: `tests/test_optimizers.py`).

Otherwise Keras' own update runs: on JAX and PyTorch, under a caller's `tf.distribute`
strategy (its variables update per replica), with AMSGrad, and for a sparse gradient
(`tf.IndexedSlices`, a trained embedding's), where Keras squares each slice rather than
their sum: kept so that trained-embedding runs give the numbers they gave before.
"""

from dsan_tf.common.frameworks import keras, ops


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
        from dsan_tf.common.frameworks import tf  # the backend: loaded already

        return not tf.distribute.has_strategy() and not isinstance(gradient, tf.IndexedSlices)

    def update_step(self, gradient, variable, learning_rate):
        if not self._fused(gradient):
            return super().update_step(gradient, variable, learning_rate)
        from dsan_tf.common.frameworks import tf

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


class _SavedConfig:
    """Reads the optimizer configurations of dsan_tf 0.4's files, which carried
    `flat_moments` (Adam's moments as one vector, a layout that changed no number: its
    only value in a shipped file is False)."""

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config.pop("flat_moments", None)
        return super().from_config(config, custom_objects=custom_objects)


@keras.saving.register_keras_serializable(package="dsan_tf")
class Adam(_SavedConfig, _OneOpPerVariable, keras.optimizers.Adam):
    """`keras.optimizers.Adam`, with one fused update op per variable on TensorFlow.

    Examples:
    ```python
    import dsan_tf
    from dsan_tf.models.optimizers import Adam

    model = dsan_tf.NLIClassifier.from_preset("dsan_snli25k_glove50", compile=False)
    model.compile(optimizer=Adam(1e-3))  # the paper's (Section 5.2)
    ```
    """


@keras.saving.register_keras_serializable(package="dsan_tf")
class AdamW(_SavedConfig, _OneOpPerVariable, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` (decoupled weight decay, applied by Keras before the
    update), with one fused update op per variable on TensorFlow."""
