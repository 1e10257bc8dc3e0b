"""The continuous bag-of-words backbone: the CBOW baseline of the paper's Table 2.

Shape legend: B batch, T tokens, D word width.
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.models.cbow.bag_of_words import BagOfWordsEncoder
from dsan_tf.models.backbone import SentenceEncoderBackbone
from dsan_tf.models.config import field_defaults
from dsan_tf.models.cbow.config import CBOWConfig


# The constructor's defaults are the configuration's (declared once, in CBOWConfig).
DEFAULTS = field_defaults(CBOWConfig)

@keras.saving.register_keras_serializable(package="dsan_tf")
class CBOWBackbone(SentenceEncoderBackbone):
    """The mean word vector of each sentence (padding excluded).

    Args:
        vocabulary_size: int, V.
        embedding_dim: D.
        trainable_embeddings: bool.

    Call arguments:
        token_ids: int [B, T], 0 padding.

    Returns:
        float [B, D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.cbow import CBOWBackbone

    backbone = CBOWBackbone(vocabulary_size=100, embedding_dim=8)
    vectors = backbone(np.array([[4, 5, 6, 0]]))  # [1, 8]: the mean of 3 word vectors
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=DEFAULTS.embedding_dim,
                 trainable_embeddings=False, **kwargs):
        super().__init__(vocabulary_size, embedding_dim, trainable_embeddings, **kwargs)
        self.encoder = BagOfWordsEncoder(name="bag_of_words", dtype=self.dtype_policy)
        self._make_token_embedding()
