"""AF-DMN's hyperparameters; defaults are Section 5.2's (300-d LSTMs and MLPs, k = 3 for
SNLI, dropout 0.2, GloVe updated in training) and the initialisation of the ESIM code the
paper links (Section 5.7; docs/FIDELITY.md#afdmn-initialisation and
#afdmn-initialisation-at-study-size)."""

import dataclasses

from dsan_tf.models.config import (
    ModelConfig, check_choice, field_defaults, hyperparameter, with_default)

INITIALIZATIONS = ("esim", "uniform", "glorot")


@dataclasses.dataclass
class AFDMNConfig(ModelConfig):
    """`ModelConfig` (dropout on the word embeddings and every MLP's input) and:

    Attributes:
        lstm_units: h (300), LSTM width per direction and MLP width.
        matching_blocks: k (3 for SNLI, 2 for MultiNLI).
        initialization: how the encoder's and blocks' weights start, one of
            `INITIALIZATIONS`: "esim" (ESIM's reference code), "uniform" (U(−s, s),
            Section 5.2 read literally) or "glorot" (Keras' Glorot uniform).
        init_scale: s, ESIM's N(0, s²) and the literal U(−s, s) (0.01).
    """

    dropout: float = with_default("dropout", 0.2)
    trainable_embeddings: bool = with_default("trainable_embeddings", True)
    lstm_units: int = hyperparameter(300, "h: LSTM width per direction and MLP width.",
                                     lower_bound=1)
    matching_blocks: int = hyperparameter(
        3, "k: computational blocks of the matching layer.", lower_bound=0)
    initialization: str = hyperparameter(
        "esim", "How the encoder's and blocks' weights start: esim (ESIM's reference code, "
        "linked in Section 5.7: orthogonal square and recurrent blocks, N(0, s^2) the rest), "
        "uniform (Section 5.2 literally: U(-s, s); does not learn at 25k pairs) or glorot "
        "(Keras' Glorot uniform).", choices=INITIALIZATIONS)
    init_scale: float = hyperparameter(
        0.01, "s of --initialization: esim's N(0, s^2), uniform's U(-s, s) (Section 5.2: "
        "0.01).", lower_bound=0.0)

    def validate(self):
        super().validate()
        check_choice("initialization", self.initialization, INITIALIZATIONS)
        if self.lstm_units < 1 or self.matching_blocks < 0 or self.init_scale <= 0:
            raise ValueError("lstm_units and init_scale must be positive, matching_blocks "
                             ">= 0 (init_scale=0 no longer means Keras' initialisers: "
                             "use initialization=glorot).")
        unused = field_defaults(ModelConfig).layer_norm_epsilon
        if self.layer_norm_epsilon != unused:
            # Every family's field (ModelConfig's), kept at its default in AF-DMN's saved
            # configurations: refused, not ignored, where it would change nothing.
            raise ValueError(f"layer_norm_epsilon does not apply to AF-DMN (it has no "
                             f"LayerNorm); leave it at {unused}, got "
                             f"{self.layer_norm_epsilon}.")
