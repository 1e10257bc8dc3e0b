"""What every model family's configuration shares (`ModelConfig`), the choices several
families share, and how a family declares a hyperparameter (`hyperparameter`: a config
field that is also a flag of the same name). Plain Python: programs build their flags
from these without loading Keras.
"""

import dataclasses
import json

from dsan_tf.choices import FUSIONS, PRIORS  # noqa: F401 (the families import them here)


def hyperparameter(default, help, **limits):
    """A config field that is also a flag of the same name. `help` is the flag's help;
    `limits` are `lower_bound`, `upper_bound` (numbers) or `choices` (strings)."""
    return dataclasses.field(default=default, metadata={"help": help, **limits})


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")


@dataclasses.dataclass
class ModelConfig:
    """The hyperparameters of every family; a family's config adds its own (a backbone's
    constructor arguments are its config).

    Attributes:
        vocab_size: int or None; None takes it from the embedding matrix.
        embedding_dim: width of the word vectors (DSAN's d_e: 300).
        dropout: rate; where it applies is each family's paper's (docs/FIDELITY.md).
        trainable_embeddings: fine-tune the word vectors (DSAN freezes GloVe).
        layer_norm_epsilon: epsilon of every LayerNorm.
        num_classes: 3 (entailment, neutral, contradiction).
    """

    vocab_size: int | None = None
    embedding_dim: int = hyperparameter(300, "d_e: word-vector width.", lower_bound=1)
    dropout: float = hyperparameter(
        0.1, "Dropout rate (where it applies: the model's paper, docs/FIDELITY.md).",
        lower_bound=0.0, upper_bound=0.99)
    trainable_embeddings: bool = hyperparameter(
        False, "Fine-tune the word vectors (DSAN keeps GloVe frozen; --embeddings=random "
        "makes them trainable unless this is given).")
    layer_norm_epsilon: float = hyperparameter(1e-5, "LayerNorm epsilon.")
    num_classes: int = 3

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ValueError, naming the field, when a value cannot work."""
        if self.embedding_dim <= 0:
            raise ValueError("embedding_dim must be positive.")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")
        if self.vocab_size is not None and self.vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2 (padding and unknown), "
                             f"got {self.vocab_size}.")

    @classmethod
    def hyperparameters(cls):
        """The fields that are flags (those declared with `hyperparameter`)."""
        return [field for field in dataclasses.fields(cls) if "help" in field.metadata]

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown {cls.__name__} field(s): {', '.join(unknown)}.")
        return cls(**values)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))


def with_default(name, default):
    """`ModelConfig`'s field `name`, its help and limits kept, with a family's own default
    (its paper's)."""
    field = next(field for field in dataclasses.fields(ModelConfig) if field.name == name)
    return dataclasses.field(default=default, metadata=field.metadata)


@dataclasses.dataclass
class SentenceEncoderConfig(ModelConfig):
    """A family that encodes each sentence alone and classifies [u; v; |u − v|; u * v]
    with DSAN's classifier (Section 4.1): `classifier_units`, its ReLU layer's width."""

    classifier_units: int = hyperparameter(300, "Width of the classifier's ReLU layer.",
                                           lower_bound=1)
