"""The flags several programs share, defined by functions (after TF Model Garden's
`official/common/flags.py`); each program calls the ones it needs and defines its own.

Defaults come from the configuration dataclasses (`dsan_tf.config`: the paper's values), so
flags and Python API cannot drift. This module imports no TensorFlow: `--help` is fast.
"""

import dataclasses
import os
import re
import textwrap

from absl import flags

from dsan_tf.config import (
    BATCHINGS, MODELS, OOV_INITS, OPTIMIZERS, PRECISIONS, DataConfig, ExperimentConfig,
    ModelConfig, TrainingConfig)
from dsan_tf.models import registry

FLAGS = flags.FLAGS
_DATA, _TRAINING = DataConfig(), TrainingConfig()
# --help's groups: absl lists a program's flags by the module name they were defined under.
MODEL_GROUP = "model"


def is_project_module(module):
    """Whether absl's `module` name holds flags of this project: a program's (its script
    path, or a `dsan_tf.programs` or `experiments` module) or a model group's."""
    return (module.startswith(("dsan_tf.programs", "experiments", MODEL_GROUP))
            or module.endswith(".py"))


def project_flags(values):
    """The flags this project defined (not absl's own), each once."""
    return list({flag.name: flag for module, module_flags in values.flags_by_module_dict().items()
                 if is_project_module(module) for flag in module_flags}.values())


def _once(topic):
    """Decorates a define function: a program and a test may both call it (the second call
    is a no-op), and the flags it defines are filed under `topic` for `--help`, unless it
    filed them itself."""
    def decorate(define):
        def wrapper():
            if define.__name__ not in _DEFINED:
                _DEFINED.add(define.__name__)
                before = set(FLAGS)
                define()
                for name in set(FLAGS) - before:
                    TOPIC_OF.setdefault(name, topic)
        wrapper.__name__, wrapper.__doc__ = define.__name__, define.__doc__
        return wrapper
    return decorate


_DEFINED = set()
# --help's topic of each flag the shared define functions made (a program's own flags are
# shown under the program); the model flags are filed per family.
TOPIC_OF = {}
TOPICS = ("model", "data", "training", "output")
# Source specs that name no local file (dsan_tf.data.sources).
DATA_PREFIXES = ("tfds:", "synthetic:")


def require_existing(name, directory=False, prefixes=(), values=()):
    """Checks, when flags are parsed (before TensorFlow loads), that each value of --name
    is an existing file (or directory), unless it starts with one of `prefixes` or is one
    of `values`; a missing one stops the program with one sentence naming flag and path."""
    exists = os.path.isdir if directory else os.path.isfile
    what = "directory" if directory else "file"

    def check(value):
        for item in value if isinstance(value, list) else [value]:
            if item is None or item in values or item.startswith(tuple(prefixes)):
                continue
            if not exists(item):
                there = (f"a file, not a {what}" if os.path.exists(item)
                         else f"no such {what}")
                raise flags.ValidationError(there)
        return True
    flags.register_validator(name, check)


def model_hyperparameters():
    """{flag name: (`dataclasses.Field`, {family: its default})} over `ModelConfig` and
    every family's configuration: one flag per field name, whichever families share it."""
    found = {}
    for name in MODELS:
        config_class = registry.family(name).config
        for field in config_class.hyperparameters():
            entry = found.setdefault(field.name, (field, {}))
            entry[1][name] = field.default
    return found


def _group(flag_name, defaults):
    """The --help group of a model flag: "model" where every family has it, else the
    families that do ("model: afdmn")."""
    shared = {field.name for field in ModelConfig.hyperparameters()}
    if flag_name in shared or len(defaults) == len(MODELS):
        return MODEL_GROUP
    return f"{MODEL_GROUP}: {', '.join(defaults)}"


def _define_hyperparameter(field, defaults):
    """One flag for a configuration field: its type, bounds or choices; the first
    family's default, and a note where families' defaults differ."""
    default = next(iter(defaults.values()))
    help_text = field.metadata["help"]
    if len(set(defaults.values())) > 1:
        help_text += " Default per model: " + ", ".join(
            f"{family} {value}" for family, value in defaults.items()) + "."
    common = dict(module_name=_group(field.name, defaults))
    bounds = {key: field.metadata[key] for key in ("lower_bound", "upper_bound")
              if key in field.metadata}
    if "choices" in field.metadata:
        flags.DEFINE_enum(field.name, default, field.metadata["choices"], help_text, **common)
    elif isinstance(default, bool):
        flags.DEFINE_boolean(field.name, default, help_text, **common)
    elif isinstance(default, int):
        flags.DEFINE_integer(field.name, default, help_text, **bounds, **common)
    elif isinstance(default, float):
        flags.DEFINE_float(field.name, default, help_text, **bounds, **common)
    else:
        flags.DEFINE_string(field.name, default, help_text, **common)


@_once("model")
def define_model_flags():
    """--model and one flag per hyperparameter of the families' configurations, same
    name; a flag left unset takes the chosen family's default (its paper's value)."""
    flags.DEFINE_enum("model", registry.DEFAULT, MODELS, "The model family; the model flags left "
                      "unset take its paper's values (docs/FIDELITY.md: each paper).",
                      module_name=MODEL_GROUP)
    for field, defaults in model_hyperparameters().values():
        _define_hyperparameter(field, defaults)
        TOPIC_OF[field.name] = _group(field.name, defaults)


@_once("data")
def define_reading_flags():
    """What every program that reads data needs: TFDS's directory and the batch size."""
    flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
    flags.DEFINE_integer("batch_size", _DATA.batch_size, "Global batch size.", lower_bound=1)


@_once("data")
def define_evaluation_flags():
    """What the programs that score trained models on data sources share: --data (the
    sources) and --save_predictions."""
    flags.DEFINE_multi_string("data", None, "Data source spec(s) to evaluate on.")
    require_existing("data", prefixes=DATA_PREFIXES)
    flags.DEFINE_boolean("save_predictions", False, "Also write the predicted and gold "
                         "label ids (an ensemble's and each member's), in file order, as "
                         "strings of digits (`predictions`, `labels`), for paired "
                         "significance tests between runs.")
    TOPIC_OF["save_predictions"] = "output"


def _define_batching_flags():
    """How training pairs become batches (`DataConfig`'s batching fields)."""
    flags.DEFINE_enum("batching", _DATA.batching, BATCHINGS, "Training batches: shuffled "
                      "pairs sorted by premise length within chunks of 50 batches (32% "
                      "padding, full batches), plain shuffled batches (59%), pairs of similar "
                      "premise length (32%) or of similar premise and hypothesis length (7%, "
                      "label-skewed); SNLI 25k dev 71.0/70.4/69.1/67.5% (FIDELITY row 44).")
    flags.DEFINE_boolean("pad_to_bucket", _DATA.pad_to_bucket, "Pad batches to their length "
                         "bucket's boundary (fewer shapes for XLA).")
    flags.DEFINE_boolean("bounded_shapes", _DATA.bounded_shapes, "Batch in NumPy to a small "
                         "fixed set of shapes (lengths fitted to the data, full batches), the "
                         "same with or without TensorFlow. Unset: on when the training step is "
                         "compiled (--jit_compile, JAX's default), which compiles once per "
                         "shape.")
    flags.DEFINE_boolean("deterministic", _DATA.deterministic, "Deterministic TF ops and "
                         "input order (same seed, same data -> same run).")


@_once("data")
def define_data_flags():
    """Data sources, text processing, batching and word vectors (`DataConfig`)."""
    define_reading_flags()
    flags.DEFINE_string("train_data", None, "Training data source spec: a file, "
                        "tfds:NAME/SPLIT or synthetic:word_order/SPLIT.")
    flags.DEFINE_string("dev_data", None, "Development data source spec (model selection).")
    flags.DEFINE_string("test_data", None,
                        "Test data source spec (evaluated once at the end).")
    flags.DEFINE_integer("train_subset", _DATA.train_subset, "Train on a random subset of "
                         "this many --train_data pairs, the same whatever --seed and --model "
                         "(learning curves); 0: all.", lower_bound=0)
    flags.DEFINE_boolean("lowercase", _DATA.lowercase, "Lower-case text before tokenizing "
                         "(GloVe 840B is cased: keep false).")
    flags.DEFINE_integer("min_count", _DATA.min_count,
                         "Keep training words seen at least this often.", lower_bound=1)
    flags.DEFINE_integer("max_length", _DATA.max_length, "Truncate sentences to this many "
                         "tokens (counted and reported); 0: never.", lower_bound=0)
    flags.DEFINE_boolean("shuffle", _DATA.shuffle, "Shuffle the training pairs every epoch "
                         "(false: file order; tf.distribute reorders a seeded shuffle, so "
                         "compare strategies without it).")
    flags.DEFINE_integer("seed", _DATA.seed, "Seed of shuffling and initialisation.")
    _define_batching_flags()
    flags.DEFINE_string("embeddings", None, "Word vectors: a GloVe-format file "
                        "(.txt/.gz/.zip), glove:840B.300d (downloaded once into "
                        "--embeddings_cache_dir) or 'random' (trained from scratch).")
    flags.DEFINE_string("embeddings_cache_dir", _DATA.embeddings_cache_dir,
                        "Cache of embedding matrices read from vector files.")
    flags.DEFINE_boolean("extend_vocabulary", _DATA.extend_vocabulary, "Give ids to the "
                         "dev/test words that --embeddings has a vector for (they would "
                         "otherwise all be the one unknown word).")
    flags.DEFINE_integer("vocab_from_vectors", _DATA.vocab_from_vectors, "Also give ids to "
                         "the first N words of the --embeddings file (GloVe is ordered by "
                         "frequency), so an exported model covers unseen text.", lower_bound=0)
    for name in ("train_data", "dev_data", "test_data"):
        require_existing(name, prefixes=DATA_PREFIXES)
    require_existing("embeddings", prefixes=("glove:",), values=("random",))
    flags.DEFINE_enum("oov_init", _DATA.oov_init, OOV_INITS, "Vectors of words missing from "
                      "the vector file: U(-oov_scale, oov_scale) or zeros.")
    flags.DEFINE_float("oov_scale", _DATA.oov_scale, "--oov_init=random draws vectors from "
                       "U(-oov_scale, oov_scale) (AF-DMN: 0.01).")


@_once("training")
def define_training_flags():
    """Optimisation and precision (`TrainingConfig`)."""
    flags.DEFINE_float("learning_rate", _TRAINING.learning_rate, "Learning rate (with "
                       "--restart_epochs, the top of each cosine cycle).", lower_bound=0.0)
    flags.DEFINE_enum("optimizer", _TRAINING.optimizer, OPTIMIZERS,
                      "Adam (DSAN) or AdamW, Adam with decoupled weight decay (with "
                      "--restart_epochs: AdamWR, the Gaussian Transformer's).")
    flags.DEFINE_float("normalized_weight_decay", _TRAINING.normalized_weight_decay,
                       "AdamW: normalized weight decay; per step lambda * sqrt(batch / "
                       "(training pairs * epochs per cycle)).")
    flags.DEFINE_integer("restart_epochs", _TRAINING.restart_epochs, "Cosine learning-rate "
                         "cycles of this many epochs, restarted at the top (0: constant).")
    flags.DEFINE_float("min_learning_rate", _TRAINING.min_learning_rate,
                       "Bottom of each cosine learning-rate cycle.")
    flags.DEFINE_boolean("halve_on_dev_drop", _TRAINING.halve_on_dev_drop, "Halve the "
                         "learning rate after an epoch whose dev accuracy fell (AF-DMN).")
    flags.DEFINE_integer("epochs", _TRAINING.epochs,
                         "Training epochs (at most, with --patience).", lower_bound=1)
    flags.DEFINE_integer("patience", _TRAINING.patience, "Stop when dev accuracy has not "
                         "improved for this many epochs (0: train all --epochs); the best "
                         "epoch's model is kept. With --restart_epochs it stops only at the "
                         "end of a cosine cycle.", lower_bound=0)
    flags.DEFINE_integer("steps_per_epoch", _TRAINING.steps_per_epoch, "Train on at most "
                         "this many batches per epoch (0: all of them).", lower_bound=0)
    flags.DEFINE_integer("schedule_epoch_pairs", _TRAINING.schedule_epoch_pairs, "How many "
                         "training pairs an epoch is, for all that counts epochs (dev checks, "
                         "--patience, --restart_epochs, --halve_on_dev_drop, --epochs): 0, one "
                         "pass over --train_data (schedules carried by epochs, the study's "
                         "choice); N, N pairs (carried by examples seen: 549367 is an epoch of "
                         "full SNLI, the papers' own).", lower_bound=0)
    flags.DEFINE_boolean("jit_compile", _TRAINING.jit_compile,
                         "Compile the training step (XLA; torch.compile on PyTorch). Unset: "
                         "off on TensorFlow and PyTorch, on under JAX (what pays there).")
    flags.DEFINE_enum("mixed_precision", _TRAINING.mixed_precision, PRECISIONS,
                      "Compute in half precision, keep float32 weights. For GPUs with fast "
                      "half precision (float16: Volta and later; bfloat16: Ampere and later, "
                      "TPUs); Pascal cards such as the paper's GTX 1080Ti are slower in "
                      "float16.")


@_once("output")
def define_workdir_flag():
    flags.DEFINE_string("workdir", None, "Run directory of experiments.train: configuration, "
                        "vocabulary, checkpoints, TensorBoard logs, best model.")


@_once("training")
def define_compilation_flags():
    """--compile_ahead and --compilation_cache (`RunOptions`): what the training programs
    do before the first epoch, and where JAX keeps compiled steps."""
    flags.DEFINE_boolean("compile_ahead", True, "Before the first epoch, trace or compile the "
                         "training and evaluation steps for every batch shape an epoch uses "
                         "(the model's state is restored afterwards), so no epoch pays for it.")
    flags.DEFINE_boolean("compilation_cache", True, "JAX: keep compiled steps in "
                         "EMBEDDINGS_CACHE_DIR/jax, so that a repeated or resumed run does not "
                         "compile them again.")


@_once("output")
def define_finished_workdir_flag():
    """--workdir of the programs that read a finished run (or an export): it must exist."""
    flags.DEFINE_string("workdir", None, "A finished experiments.train run directory, or an "
                        "export of experiments.export.")
    require_existing("workdir", directory=True)


@_once("output")
def define_output_flag():
    flags.DEFINE_string("output", None, "Write the results to this JSON file.")


def model_config(values=FLAGS, **overrides):
    """The configuration of the --model family that the model flags describe: a flag left
    unset takes the family's default; a bad combination raises `flags.ValidationError`
    with one sentence."""
    name = values["model"].value if "model" in values else registry.DEFAULT
    config_class = registry.family(name).config
    config = {field.name: values[field.name].value
              for field in config_class.hyperparameters()
              if field.name in values and values[field.name].present}
    if ("embeddings" in values and values["embeddings"].value == "random"
            and not values["trainable_embeddings"].present):
        config["trainable_embeddings"] = True  # random vectors must be learned
    config.update(overrides)
    try:
        return config_class(**config)
    except ValueError as error:
        raise flags.ValidationError(f"bad model flags: {error}") from None


def family_defaults(values=FLAGS):
    """{flag: the --model family's default} for the model flags left unset whose flag
    default is another family's (flags.txt records what they stood for)."""
    if "model" not in values:
        return {}
    config_class = registry.family(values["model"].value).config
    return {field.name: field.default for field in config_class.hyperparameters()
            if field.name in values and not values[field.name].present
            and values[field.name].value != field.default}


def _from_flags(config_class, values):
    """`config_class` with the fields the program has flags for taken from them."""
    names = [f.name for f in dataclasses.fields(config_class)]
    return config_class(**{name: values[name].value for name in names if name in values})


def experiment_config(values=FLAGS, **model_overrides):
    """The `ExperimentConfig` of the flags a program defined (others keep the defaults);
    an unset --jit_compile becomes what pays on the Keras backend."""
    from dsan_tf.optimization import default_jit_compile  # loads Keras

    try:
        training = _from_flags(TrainingConfig, values)
        if training.jit_compile is None:
            training.jit_compile = default_jit_compile()
        data = _from_flags(DataConfig, values)
        if data.bounded_shapes is None:
            data.bounded_shapes = training.jit_compile
        return ExperimentConfig(
            model=values["model"].value, model_config=model_config(values, **model_overrides),
            data=data, training=training)
    except ValueError as error:
        raise flags.ValidationError(str(error)) from None


def reading_config(values=FLAGS, model=registry.DEFAULT):
    """The `ExperimentConfig` of a program that reads data for a trained `model`: its
    --tfds_data_dir and --batch_size (`define_reading_flags`), defaults otherwise."""
    return ExperimentConfig(model=model, data=DataConfig(
        tfds_data_dir=values["tfds_data_dir"].value, batch_size=values["batch_size"].value))


def flagfile_lines(values=FLAGS, exclude=(), **resolved):
    """The program's own flags (not absl's, not those in `exclude`), with `resolved` values
    replacing the given ones, as --flagfile lines that repeat the run."""
    resolved = dict(family_defaults(values), **resolved)
    lines = []
    for flag in sorted(project_flags(values), key=lambda f: f.name):
        value = resolved.get(flag.name, flag.value)
        if value is None or flag.name in exclude:
            continue
        if isinstance(value, bool):
            lines.append(f"--{'' if value else 'no'}{flag.name}")
        elif flag.name in resolved:
            lines.append(f"--{flag.name}={value}")
        else:
            lines.append(flag.serialize())
    return lines


def short_help(values=FLAGS, program="this program"):
    """`--help`: each flag on a line or two (its help's first sentence), grouped by topic
    (model, each family's model flags, data, training, output, the program's own)."""
    groups = {}
    for flag in sorted(project_flags(values), key=lambda f: (f.name != "model", f.name)):
        groups.setdefault(TOPIC_OF.get(flag.name, program), []).append(flag)
    first_family = lambda topic: MODELS.index(topic.split(": ")[1].split(", ")[0])  # noqa
    order = ([MODEL_GROUP]
             + sorted((t for t in groups if t.startswith(MODEL_GROUP + ":")), key=first_family)
             + list(TOPICS[1:]) + [program])
    lines = ["Flags by topic (--helpfull: every flag with its default and type; "
             "--flagfile=FILE reads flags from a file, one per line, as "
             "experiments/configs/*.cfg):"]
    for topic in [t for t in order if t in groups]:
        lines.append(f"\n{topic}:")
        for flag in groups[topic]:
            # The first sentence: a full stop before a capital, not "et al." or "e.g.".
            text = " ".join(flag.help.split()).replace(".; repeat this option to specify a "
                                                       "list of values", " (repeatable)")
            first = re.split(r"(?<!al)(?<!e\.g)\.\s+(?=[A-Z])", text)[0].rstrip(".") + "."
            default = "" if flag.default is None else f" ({flag.default_as_str.strip(chr(39))})"
            lines += textwrap.wrap(f"--{flag.name}{default}: {first}", 96,
                                   initial_indent="  ", subsequent_indent="      ")
    return "\n".join(lines)


def lengths(name, values=FLAGS):
    """The sorted positive integers of a comma-separated list flag (ValueError otherwise)."""
    try:
        result = sorted({int(value) for value in values[name].value})
    except ValueError:
        result = []
    if not result or result[0] < 1:
        raise ValueError(f"--{name} must be positive integers separated by commas, got "
                         f"{','.join(values[name].value)!r}.")
    return result
