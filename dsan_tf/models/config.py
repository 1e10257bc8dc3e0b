"""What every model family's configuration shares (`ModelConfig`), the choices several
families share, and how a family declares a hyperparameter (`hyperparameter`: a config
field that is also a flag of the same name). Plain Python: programs build their flags
from these without loading Keras.
"""

import dataclasses
import json
import os
import textwrap
import types

from dsan_tf.common.choices import FUSIONS, PRIORS  # noqa: F401 (the families import them here)

# DSAN's optimiser and batch (Section 5.2: Adam, learning rate 1e-3, 64 pairs): the
# training configuration's defaults and a task model's `compile("auto")` and text `fit`.
LEARNING_RATE, BATCH_SIZE = 1e-3, 64


def hyperparameter(default, help, **limits):
    """A config field that is also a flag of the same name. `help` is the field's
    documentation and the flag's help; `limits` are `lower_bound`, `upper_bound`
    (numbers, checked by `check_fields` and by the flag parser), `choices` (strings),
    `exists` ("file" or "directory": a flag's value must name one, unless it starts with
    one of `prefixes` or is one of `values`) and `topic` (its group in `--help`)."""
    return dataclasses.field(default=default, metadata={"help": help, **limits})


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")


def value_type(field):
    """bool, int, float or str: the type of a field's values (`int | None` is int)."""
    kind = field.type
    if isinstance(kind, types.UnionType):
        kind = next(arg for arg in kind.__args__ if arg is not type(None))
    return kind


def typed_value(field, value):
    """`value` (text as a flagfile writes it, or a value) as `field`'s type; ValueError
    naming the field otherwise."""
    kind = value_type(field)
    if not isinstance(value, str) or kind is str:
        return value
    if kind is bool:
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"{field.name} takes true or false, got {value!r}.")
        return value.lower() in ("true", "1")
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{field.name} takes a {kind.__name__}, got {value!r}.") from None


def described_fields(config_class):
    """The fields of `config_class` declared with `hyperparameter` (they are flags)."""
    return [field for field in dataclasses.fields(config_class) if "help" in field.metadata]


def local_path(field, value):
    """Whether `value` of `field` names a file or folder on this machine: the field is one
    (its `exists`, or `path="folder"` for one that need not exist yet) and the value is
    not one of its `prefixes` (tfds:, synthetic:, glove:) or named `values` (random)."""
    limits = field.metadata
    return (("exists" in limits or "path" in limits) and isinstance(value, str)
            and value not in limits.get("values", ())
            and not value.startswith(tuple(limits.get("prefixes", ()))))


def absolute_paths(config, base=None):
    """`config` (a configuration dataclass) with each local path made absolute from `base`
    (default: this process's folder): the value a run on another node, whose folder differs,
    reads as this machine does. "~" is left to each node (a cache is each machine's own)."""
    changes = {}
    for field in described_fields(type(config)):
        value = getattr(config, field.name)
        if local_path(field, value) and not value.startswith("~"):
            changes[field.name] = os.path.abspath(os.path.join(base or os.getcwd(), value))
    return dataclasses.replace(config, **changes)


def local_files(config):
    """The local files `config` reads (its `exists="file"` fields' values)."""
    return [getattr(config, field.name) for field in described_fields(type(config))
            if field.metadata.get("exists") == "file"
            and local_path(field, getattr(config, field.name))]


def check_fields(config):
    """Raises ValueError, naming the field, when a value of `config` is outside its
    field's `choices`, `lower_bound` or `upper_bound` (None values are "unset")."""
    for field in described_fields(type(config)):
        value, limits = getattr(config, field.name), field.metadata
        if value is None:
            continue
        if "choices" in limits:
            check_choice(field.name, value, limits["choices"])
        if "lower_bound" in limits and value < limits["lower_bound"]:
            raise ValueError(f"{field.name} must be >= {limits['lower_bound']}, got {value}.")
        if "upper_bound" in limits and value > limits["upper_bound"]:
            raise ValueError(f"{field.name} must be <= {limits['upper_bound']}, got {value}.")


def documented(config_class):
    """Decorates a configuration dataclass: its docstring ends with an `Attributes:`
    section made of its fields' `help`, so that the documentation is written once (the
    flags show the same text)."""
    lines = ["", "", "    Attributes:"]
    for field in described_fields(config_class):
        lines += textwrap.wrap(f"{field.name}: {field.metadata['help']}", 88,
                               initial_indent="        ", subsequent_indent="            ")
    config_class.__doc__ = (config_class.__doc__ or "").rstrip() + "\n".join(lines) + "\n"
    return config_class


@dataclasses.dataclass
class ModelConfig:
    """The hyperparameters of every family; a family's config adds its own (a backbone's
    constructor arguments are its config).

    Attributes:
        vocab_size: int or None; None takes it from the embedding matrix.
        embedding_dim: width of the word vectors (DSAN's d_e: 300).
        dropout: rate; where it applies is each family's paper's (docs/FIDELITY.md).
        trainable_embeddings: fine-tune the word vectors; None: only when they start
            random (no vectors given), as DSAN freezes GloVe.
        layer_norm_epsilon: epsilon of every LayerNorm.
        num_classes: 3 (entailment, neutral, contradiction).
    """

    vocab_size: int | None = None
    embedding_dim: int = hyperparameter(300, "d_e: word-vector width.", lower_bound=1)
    dropout: float = hyperparameter(
        0.1, "Dropout rate (where it applies: the model's paper, docs/FIDELITY.md).",
        lower_bound=0.0, upper_bound=0.99)
    trainable_embeddings: bool | None = hyperparameter(
        None, "Fine-tune the word vectors. Unset: trained when there are none to start from "
        "(random vectors), frozen otherwise (DSAN keeps GloVe frozen). In Python, "
        "`backbone.token_embedding.trainable = True` (or `backbone.trainable = True`, every "
        "layer) unfreezes them on a built model, and a saved file keeps it.")
    layer_norm_epsilon: float = hyperparameter(1e-5, "LayerNorm epsilon.")
    num_classes: int = 3

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ValueError, naming the field, when a value cannot work (every field's
        declared limits, then a family's own rules)."""
        check_fields(self)
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
        return described_fields(cls)

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


def field_defaults(config_class):
    """The declared defaults of `config_class`'s fields, as attributes: a backbone's
    constructor defaults, so that each value is written once, in its field."""
    return types.SimpleNamespace(**{
        field.name: field.default for field in dataclasses.fields(config_class)
        if field.default is not dataclasses.MISSING})


def with_default(name, default):
    """`ModelConfig`'s field `name`, its help and limits kept, with a family's own default
    (its paper's)."""
    fields = {field.name: field for field in dataclasses.fields(ModelConfig)}
    if name not in fields:
        raise ValueError(f"with_default({name!r}, ...): {name!r} is no field of ModelConfig "
                         f"({', '.join(fields)}); a family's own field is declared with "
                         "hyperparameter(default, help, limits).")
    return dataclasses.field(default=default, metadata=fields[name].metadata)


@dataclasses.dataclass
class SentenceEncoderConfig(ModelConfig):
    """A family that encodes each sentence alone and classifies [u; v; |u − v|; u * v]
    with DSAN's classifier (Section 4.1): `classifier_units`, its ReLU layer's width."""

    classifier_units: int = hyperparameter(300, "Width of the classifier's ReLU layer.",
                                           lower_bound=1)
