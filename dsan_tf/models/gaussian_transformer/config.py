"""The Gaussian Transformer's hyperparameters; defaults are its best single model's (Guo,
Zhang & Liu 2019, implementation paragraph: M = 3, N = 2, H = 4, d_model = 120, d_c = 30,
dropout 0.1; Table 1 (vii): the prior of eq. (4))."""

import dataclasses

from dsan_tf.models.config import PRIORS, ModelConfig, check_choice, hyperparameter

# The priors that need no hyperparameter of DSAN's (the linear prior's α, the learned one's
# longest distance): this family declares neither.
GAUSSIAN_TRANSFORMER_PRIORS = tuple(prior for prior in PRIORS
                                    if prior not in ("linear", "learned"))


@dataclasses.dataclass
class GaussianTransformerConfig(ModelConfig):
    """`ModelConfig` (embedding_dim = d_w; dropout on every sub-layer) and:

    Attributes:
        num_heads: H (4).
        distance_prior: the prior of its self-attentions
            (`GAUSSIAN_TRANSFORMER_PRIORS`; eq. (4): "gaussian_variant").
        model_dim: d_model (120), the width inside the blocks, its FFN and classifier.
        num_encoder_blocks: M (3).
        num_interaction_blocks: N (2).
        char_dim: d_c (30), width of the fixed character 5-gram vectors.
    """

    num_heads: int = hyperparameter(4, "H: attention heads (d_model / H each).",
                                    lower_bound=1)
    distance_prior: str = hyperparameter(
        "gaussian_variant", "The prior of its self-attentions (eq. (4): gaussian_variant).",
        choices=GAUSSIAN_TRANSFORMER_PRIORS)
    model_dim: int = hyperparameter(120, "d_model: the width inside its blocks.",
                                    lower_bound=1)
    num_encoder_blocks: int = hyperparameter(3, "M: encoding blocks.", lower_bound=1)
    num_interaction_blocks: int = hyperparameter(2, "N: interaction blocks.", lower_bound=0)
    char_dim: int = hyperparameter(30, "d_c: width of the fixed character 5-gram vectors.",
                                   lower_bound=1)

    def validate(self):
        super().validate()
        check_choice("distance_prior", self.distance_prior, GAUSSIAN_TRANSFORMER_PRIORS)
        if min(self.model_dim, self.num_encoder_blocks, self.char_dim, self.num_heads) < 1:
            raise ValueError("model_dim, num_encoder_blocks, char_dim and num_heads must be "
                             "positive.")
        if self.num_interaction_blocks < 0:
            raise ValueError("num_interaction_blocks must be >= 0.")
        if self.model_dim % self.num_heads:
            raise ValueError(f"model_dim={self.model_dim} must be divisible by "
                             f"num_heads={self.num_heads}.")
