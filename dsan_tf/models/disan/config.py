"""DiSAN's hyperparameters in DSAN's setting: the shared ones and DSAN's classifier."""

import dataclasses

from dsan_tf.models.config import ModelConfig, hyperparameter


@dataclasses.dataclass
class DiSANConfig(ModelConfig):
    """`ModelConfig` (D = embedding_dim) and `classifier_units`, the width of DSAN's
    classifier's ReLU layer (300)."""

    classifier_units: int = hyperparameter(300, "Width of the classifier's ReLU layer.",
                                           lower_bound=1)
