"""Model configuration: the paper's hyperparameters and the ablation/comparison switches."""

import dataclasses
import json

from dsan_tf.layers.attention import QKV_NORMS
from dsan_tf.layers.distance_prior import PRIORS
from dsan_tf.layers.encoder import POOLINGS
from dsan_tf.layers.fusion import FUSIONS


@dataclasses.dataclass
class DSANConfig:
    """Hyperparameters of `build_dsan`; defaults are the paper's (Im & Cho, 2017: Section 4.1
    for the classifier, 4.2.4 for d_ff = 4·d_e, 5.2 for d_e, h, α, dropout and LayerNorm).

    Attributes:
        vocab_size: int or None; None takes it from the embedding matrix.
        embedding_dim: d_e, width of the word vectors and of each block (300).
        num_heads: h (5); d_k = embedding_dim / num_heads.
        ffn_dim: d_ff (4·d_e = 1200).
        distance_prior: how attention favours nearby words, one of
            `dsan_tf.layers.PRIORS`: "linear" is the paper's α·M_dis, "none" its Table 1
            ablation; "gaussian", "gaussian_variant", "zipf", "learned" are the
            alternatives of the Gaussian Transformer paper (see `DistancePrior`).
        distance_alpha: α (1.5) of the linear prior, fixed, not trained.
        prior_max_distance: distances above this share one bias of the learned prior.
        use_direction_mask: apply M_dir; False masks only the diagonal.
        fusion: "projected" (the paper: gate the projected S^F, H^F) or "raw" (DiSAN).
        pooling: "multi_dim_max" (the paper), "multi_dim" or "max".
        dropout: rate on the attention output, inside the fusion gate (Section 5.2) and
            on the classifier's ReLU layer (Section 4.1) (0.1).
        qkv_norm: LayerNorm of the Q, K, V projections: "per_head" (each head's d_k-wide
            projection, eq. 8's W_i) or "full" (the d_e-wide projection of all heads).
        classifier_units: width of the ReLU layer of the classifier (300).
        num_classes: 3 (entailment, neutral, contradiction).
        trainable_embeddings: False (the paper freezes GloVe).
        layer_norm_epsilon: epsilon of every LayerNorm.
    """

    vocab_size: int | None = None
    embedding_dim: int = 300
    num_heads: int = 5
    ffn_dim: int = 1200
    distance_prior: str = "linear"
    distance_alpha: float = 1.5
    prior_max_distance: int = 10
    use_direction_mask: bool = True
    fusion: str = "projected"
    pooling: str = "multi_dim_max"
    dropout: float = 0.1
    qkv_norm: str = "per_head"
    classifier_units: int = 300
    num_classes: int = 3
    trainable_embeddings: bool = False
    layer_norm_epsilon: float = 1e-5

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ValueError, naming the field, when a value cannot work."""
        if self.embedding_dim <= 0 or self.num_heads <= 0:
            raise ValueError("embedding_dim and num_heads must be positive.")
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"embedding_dim={self.embedding_dim} must be divisible by "
                f"num_heads={self.num_heads}.")
        if self.distance_prior not in PRIORS:
            raise ValueError(
                f"distance_prior must be one of {PRIORS}, got {self.distance_prior!r}.")
        if self.prior_max_distance < 1:
            raise ValueError(f"prior_max_distance must be >= 1, got {self.prior_max_distance}.")
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {self.fusion!r}.")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}.")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")
        if self.qkv_norm not in QKV_NORMS:
            raise ValueError(f"qkv_norm must be one of {QKV_NORMS}, got {self.qkv_norm!r}.")
        if self.vocab_size is not None and self.vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2 (padding and unknown), "
                             f"got {self.vocab_size}.")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown DSANConfig field(s): {', '.join(unknown)}.")
        return cls(**values)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))
