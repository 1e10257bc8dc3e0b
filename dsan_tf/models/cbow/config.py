"""CBOW's hyperparameters: the shared ones and DSAN's classifier."""

import dataclasses

from dsan_tf.models.config import SentenceEncoderConfig


@dataclasses.dataclass
class CBOWConfig(SentenceEncoderConfig):
    """`SentenceEncoderConfig`: the mean of the word vectors needs nothing more."""
