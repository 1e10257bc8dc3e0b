"""DiSAN's hyperparameters in DSAN's configuration: the shared ones and DSAN's classifier."""

import dataclasses

from dsan_tf.models.config import SentenceEncoderConfig


@dataclasses.dataclass
class DiSANConfig(SentenceEncoderConfig):
    """`SentenceEncoderConfig` (D = embedding_dim; DSAN's classifier): DiSAN adds no
    hyperparameter of its own in DSAN's configuration."""
