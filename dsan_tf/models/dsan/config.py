"""DSAN's hyperparameters; defaults are the paper's (Im & Cho 2017: Section 4.1 for the
classifier, 4.2.4 for d_ff = 4·d_e, 5.2 for d_e, h, α, dropout and LayerNorm)."""

import dataclasses

from dsan_tf.common.choices import INITIALIZATIONS, MAX_POOL_PADDINGS
from dsan_tf.models.config import (
    FUSIONS, PRIORS, SentenceEncoderConfig, check_choice, hyperparameter)

POOLINGS = ("multi_dim_max", "multi_dim", "max")
QKV_NORMS = ("per_head", "full", "shared")
ATTENTION_SCALES = ("d_k", "d_e")
NORM_SHARING = ("separate", "shared")


@dataclasses.dataclass
class DSANConfig(SentenceEncoderConfig):
    """`SentenceEncoderConfig` (d_e = embedding_dim, the width of every block; dropout on the
    attention output, inside the fusion gate (Section 5.2) and on the classifier's ReLU
    layer (Section 4.1)) and:

    Attributes:
        num_heads: h (5); d_k = embedding_dim / num_heads.
        ffn_dim: d_ff (4·d_e = 1200).
        distance_prior: one of `PRIORS`: "linear" is the paper's α·M_dis, "none" its Table 1
            ablation; the others are the Gaussian Transformer paper's (`DistancePrior`).
        distance_alpha: α (1.5) of the linear prior, fixed, not trained.
        prior_max_distance: distances above this share one bias of the learned prior.
        use_direction_mask: apply M_dir; False masks only the diagonal.
        fusion: "projected" (the paper: gate the projected S^F, H^F) or "raw" (DiSAN's).
        pooling: "multi_dim_max" (the paper), "multi_dim" or "max".
        qkv_norm: LayerNorm of the Q, K, V projections: "per_head" (each head's d_k-wide
            projection, eq. 8's W_i), "full" (the d_e-wide projection of all heads) or
            "shared" (per head, one LayerNorm for Q, K and V).

    The fields after `qkv_norm` are the departures of the SAN4NLI-pytorch
    implementation (docs/FIDELITY.md#san4nli); each default is the paper's reading,
    and the `san4nli` preset sets them all.
    """

    num_heads: int = hyperparameter(5, "h: attention heads (d_k = d_e / h).", lower_bound=1)
    ffn_dim: int = hyperparameter(1200, "d_ff: hidden width of the position-wise FFN.",
                                  lower_bound=1)
    distance_prior: str = hyperparameter(
        "linear", "Bias favouring nearby words: linear = alpha * M_dis (DSAN), none (its "
        "Table 1 ablation), gaussian, gaussian_variant, zipf, learned (the Gaussian "
        "Transformer paper's).", choices=PRIORS)
    distance_alpha: float = hyperparameter(1.5, "alpha: scale of the linear distance prior.")
    prior_max_distance: int = hyperparameter(
        10, "Learned prior: distances above this share one bias.", lower_bound=1)
    use_direction_mask: bool = hyperparameter(
        True, "Apply the forward/backward masks; false masks only the diagonal.")
    fusion: str = hyperparameter(
        "projected", "Fusion gate on projected S^F, H^F (paper) or raw S, H (DiSAN's).",
        choices=FUSIONS)
    pooling: str = hyperparameter(
        "multi_dim_max", "Sentence pooling: source2token + max (paper), source2token only, "
        "max only.", choices=POOLINGS)
    qkv_norm: str = hyperparameter(
        "per_head", "LayerNorm of the Q, K, V projections: per head (d_k wide) or over the "
        "full d_e-wide projection before splitting into heads.", choices=QKV_NORMS)

    attention_scale: str = hyperparameter(
        "d_k", "Divide the attention logits by sqrt(d_k) (eq. 7) or by sqrt(d_e) "
        "(SAN4NLI's).", choices=ATTENTION_SCALES)
    fusion_norm: str = hyperparameter(
        "separate", "LayerNorm of the fusion gate's S^F and H^F: one each (separate) or one "
        "shared by both, and by the gate's output when it is normalised (SAN4NLI's).",
        choices=NORM_SHARING)
    fusion_output_norm: bool = hyperparameter(
        False, "LayerNorm on the fusion gate's output (SAN4NLI's; eq. 12 has none).")
    ffn_dropout: bool = hyperparameter(
        False, "Dropout on the FFN's output before the residual (SAN4NLI's; Section 5.2 "
        "names none there).")
    s2t_norm: str = hyperparameter(
        "separate", "LayerNorm of source2token's two projections (eq. 14): one each "
        "(separate) or one shared by both (SAN4NLI's).", choices=NORM_SHARING)
    max_pool_padding: str = hyperparameter(
        "masked", "Max pooling over real tokens only (masked) or over the padded sentence "
        "with padding as 0 (zeros, SAN4NLI's).", choices=MAX_POOL_PADDINGS)
    initialization: str = hyperparameter(
        "glorot", "glorot: Glorot-uniform kernels, zero biases (TF's default). san4nli: "
        "Xavier-normal per-head Q, K, V tensors [h, d_e, d_k] and fusion W^S, W^H; "
        "PyTorch's Linear default U(+-1/sqrt(fan_in)) for every other kernel and bias.",
        choices=INITIALIZATIONS)
    classifier_input_dropout: bool = hyperparameter(
        False, "Dropout on the classifier's 16 d_e input features (SAN4NLI's; Section 4.1 "
        "names dropout on the ReLU layer only).")

    def validate(self):
        super().validate()
        check_choice("distance_prior", self.distance_prior, PRIORS)
        check_choice("fusion", self.fusion, FUSIONS)
        check_choice("pooling", self.pooling, POOLINGS)
        check_choice("qkv_norm", self.qkv_norm, QKV_NORMS)
        if self.num_heads <= 0 or self.embedding_dim % self.num_heads:
            raise ValueError(f"embedding_dim={self.embedding_dim} must be divisible by "
                             f"num_heads={self.num_heads}.")
        if self.prior_max_distance < 1:
            raise ValueError(f"prior_max_distance must be >= 1, got {self.prior_max_distance}.")
