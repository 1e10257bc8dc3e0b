"""Distance priors: additive attention-logit biases that favour nearby words.

DSAN's distance mask (Im & Cho, 2017, eq. 7 and Figure 4: α·M_dis, M_dis[i, j] = -|i - j|) and the
alternatives compared in Table 1 of the Gaussian Transformer paper (Guo et al., 2019).

Shape legend: T tokens. d = |i - j| is the distance between query i and key j.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.common.choices import PRIORS


@keras.saving.register_keras_serializable(package="dsan_tf")
class Clip(keras.constraints.Constraint):
    """Keeps a weight inside [min_value, max_value] after every optimizer step."""

    def __init__(self, min_value=None, max_value=None):
        self.min_value = min_value
        self.max_value = max_value

    def __call__(self, w):
        lower = float("-inf") if self.min_value is None else self.min_value
        upper = float("inf") if self.max_value is None else self.max_value
        return ops.clip(w, lower, upper)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value}


@keras.saving.register_keras_serializable(package="dsan_tf")
class DistancePrior(keras.layers.Layer):
    """Maps query-key distances d to a bias added to the attention logits.

    `linear`:            -α·d                  (DSAN, α fixed; the paper uses 1.5)
    `gaussian`:          -w·d²,                 w > 0 learned
    `gaussian_variant`:  -|w·d² + b|,           w > 0, b ≤ 0 learned (Gaussian
                                                Transformer eq. 4: the token's own
                                                weight is reduced, not removed)
    `zipf`:              log(1 / (d + 1))
    `learned`:           β[min(d, max_distance)], one learned scalar per clipped
                         distance (Parikh et al., 2016), initialised to 0
    `none`:              0

    Every prior is shared by the heads of one attention layer. The learned scalars are
    kept in range by `Clip` constraints (w ≥ `min_weight`, b ≤ 0).

    Args:
        prior: one of `PRIORS`.
        alpha: float, α of `linear` (which needs it; ignored otherwise).
        max_distance: int, distances above this share one `learned` bias (which needs
            it; ignored otherwise).
        initial_weight: float, initial w of the Gaussian priors.
        min_weight: float > 0, lower bound of w.

    Call arguments:
        distances: int [T, T] (or any shape), d = |i - j| ≥ 0.

    Returns:
        float32 bias of the same shape.

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import DistancePrior

    distances = np.abs(np.arange(5)[:, None] - np.arange(5)[None, :])
    bias = DistancePrior("linear", alpha=1.5)(distances)  # -1.5 |i - j|, [5, 5]
    ```
    """

    def __init__(self, prior, alpha=None, max_distance=None, initial_weight=1.0,
                 min_weight=1e-4, **kwargs):
        super().__init__(**kwargs)
        if prior not in PRIORS:
            raise ValueError(f"distance prior must be one of {PRIORS}, got {prior!r}.")
        # A model passes the values its configuration holds: none taken from here.
        if prior == "linear" and alpha is None:
            raise ValueError("the linear distance prior needs alpha (its α), got none.")
        if prior == "learned" and (max_distance is None or max_distance < 1):
            raise ValueError(f"the learned distance prior needs max_distance >= 1, "
                             f"got {max_distance}.")
        if min_weight <= 0 or initial_weight < min_weight:
            raise ValueError("need initial_weight >= min_weight > 0.")
        self.prior = prior
        self.alpha = alpha
        self.max_distance = max_distance
        self.initial_weight = initial_weight
        self.min_weight = min_weight

    def build(self, distances_shape=None):
        # float32 whatever the policy: the bias joins float32 logits, so its weights are
        # read as float32, not cast to a mixed policy's float16 (which would round them).
        scalar = dict(shape=(), dtype="float32", autocast=False)
        if self.prior in ("gaussian", "gaussian_variant"):
            self.weight = self.add_weight(
                name="weight", initializer=keras.initializers.Constant(self.initial_weight),
                constraint=Clip(min_value=self.min_weight), **scalar)
        if self.prior == "gaussian_variant":
            self.bias = self.add_weight(name="bias", initializer="zeros",
                                        constraint=Clip(max_value=0.0), **scalar)
        if self.prior == "learned":
            self.distance_bias = self.add_weight(
                name="distance_bias", shape=(self.max_distance + 1,), dtype="float32",
                initializer="zeros", autocast=False)
        self.built = True

    def call(self, distances):
        d = ops.cast(distances, "float32")
        if self.prior == "linear":
            return -self.alpha * d
        if self.prior == "gaussian":
            return -self.weight * ops.square(d)
        if self.prior == "gaussian_variant":
            return -ops.abs(self.weight * ops.square(d) + self.bias)
        if self.prior == "zipf":
            return -ops.log1p(d)
        if self.prior == "learned":
            clipped = ops.minimum(ops.cast(distances, "int32"), self.max_distance)
            return ops.take(self.distance_bias, clipped)
        return ops.zeros_like(d)

    def compute_output_shape(self, distances_shape):
        return distances_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "prior": self.prior,
            "alpha": self.alpha,
            "max_distance": self.max_distance,
            "initial_weight": self.initial_weight,
            "min_weight": self.min_weight,
        })
        return config
