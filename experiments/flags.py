"""The flags several programs share, defined by functions (after TF Model Garden's
`official/common/flags.py`); each program calls the ones it needs and defines its own.

Defaults come from the configuration dataclasses (`dsan_tf.config`: the paper's values), so
flags and Python API cannot drift. This module imports no TensorFlow: `--help` is fast.
"""

import dataclasses
import os

from absl import flags

from dsan_tf.config import (
    BATCHINGS, FUSIONS, INITIALIZATIONS, MODEL_DEFAULTS, MODELS, OOV_INITS, OPTIMIZERS, POOLINGS, PRECISIONS,
    PRIORS, QKV_NORMS, DataConfig, DSANConfig, ExperimentConfig, TrainingConfig, check_model)

FLAGS = flags.FLAGS
_MODEL, _DATA, _TRAINING = DSANConfig(), DataConfig(), TrainingConfig()
# DSANConfig fields that are not flags: the vocabulary decides the one, the task the other.
_NOT_MODEL_FLAGS = ("vocab_size", "num_classes")


def _once(define):
    """Lets a program and a test both call a define function: the second call is a no-op."""
    def wrapper():
        if define.__name__ not in _DEFINED:
            _DEFINED.add(define.__name__)
            define()
    wrapper.__name__, wrapper.__doc__ = define.__name__, define.__doc__
    return wrapper


_DEFINED = set()
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


@_once
def define_model_flags():
    """--model and one flag per `DSANConfig` field, same name."""
    flags.DEFINE_enum("model", "dsan", MODELS,
                      "Model: DSAN, the DiSAN baseline (Shen et al. 2017), the CBOW baseline "
                      "or the Gaussian Transformer (Guo et al. 2019; model flags left unset "
                      "take its paper's values: --num_heads=4 "
                      "--distance_prior=gaussian_variant).")
    flags.DEFINE_integer("embedding_dim", _MODEL.embedding_dim,
                         "d_e: word-vector and block width.", lower_bound=1)
    flags.DEFINE_integer("num_heads", _MODEL.num_heads, "h: attention heads (d_k = d_e / h).",
                         lower_bound=1)
    flags.DEFINE_integer("ffn_dim", _MODEL.ffn_dim,
                         "d_ff: hidden width of the position-wise FFN.", lower_bound=1)
    flags.DEFINE_float("dropout", _MODEL.dropout,
                       "Dropout on the attention output, in the fusion gate and on the "
                       "classifier's ReLU layer.", lower_bound=0.0, upper_bound=0.99)
    flags.DEFINE_integer("classifier_units", _MODEL.classifier_units,
                         "Width of the classifier's ReLU layer.", lower_bound=1)
    flags.DEFINE_boolean("trainable_embeddings", _MODEL.trainable_embeddings,
                         "Fine-tune the word vectors (the paper keeps GloVe frozen; "
                         "--embeddings=random makes them trainable unless this is given).")
    flags.DEFINE_float("layer_norm_epsilon", _MODEL.layer_norm_epsilon, "LayerNorm epsilon.")
    _define_dsan_flags()
    _define_rival_flags()


def _define_dsan_flags():
    """DSAN's own choices: the distance prior, masks, fusion, pooling, Q/K/V norms."""
    flags.DEFINE_enum("distance_prior", _MODEL.distance_prior, PRIORS,
                      "Bias favouring nearby words: linear = alpha * M_dis (paper), none "
                      "(Table 1 ablation), gaussian, gaussian_variant, zipf, learned "
                      "(Gaussian Transformer).")
    flags.DEFINE_float("distance_alpha", _MODEL.distance_alpha,
                       "alpha: scale of the linear distance prior.")
    flags.DEFINE_integer("prior_max_distance", _MODEL.prior_max_distance,
                         "Learned prior: distances above this share one bias.")
    flags.DEFINE_boolean("use_direction_mask", _MODEL.use_direction_mask,
                         "Apply the forward/backward masks; false masks only the diagonal.")
    flags.DEFINE_enum("fusion", _MODEL.fusion, FUSIONS,
                      "Fusion gate on projected S^F, H^F (paper) or raw S, H (DiSAN).")
    flags.DEFINE_enum("pooling", _MODEL.pooling, POOLINGS,
                      "Sentence pooling: source2token + max (paper), source2token only, "
                      "max only.")
    flags.DEFINE_enum("qkv_norm", _MODEL.qkv_norm, QKV_NORMS,
                      "LayerNorm of the Q, K, V projections: per head (d_k wide) or over the "
                      "full d_e-wide projection before splitting into heads.")


def _define_rival_flags():
    """The Gaussian Transformer's and AF-DMN's sizes."""
    flags.DEFINE_integer("model_dim", _MODEL.model_dim,
                         "Gaussian Transformer: d_model, the width inside its blocks.")
    flags.DEFINE_integer("num_encoder_blocks", _MODEL.num_encoder_blocks,
                         "Gaussian Transformer: M, encoding blocks.")
    flags.DEFINE_integer("num_interaction_blocks", _MODEL.num_interaction_blocks,
                         "Gaussian Transformer: N, interaction blocks.")
    flags.DEFINE_integer("char_dim", _MODEL.char_dim,
                         "Gaussian Transformer: d_c, width of the fixed character 5-gram "
                         "vectors.")
    flags.DEFINE_integer("lstm_units", _MODEL.lstm_units,
                         "AF-DMN: h, LSTM width per direction and MLP width.")
    flags.DEFINE_integer("matching_blocks", _MODEL.matching_blocks,
                         "AF-DMN: k, computational blocks of the matching layer.")
    flags.DEFINE_enum("initialization", _MODEL.initialization, INITIALIZATIONS,
                      "AF-DMN: how the encoder's and blocks' weights start: esim (ESIM's "
                      "reference code, linked in Section 5.7: orthogonal square and recurrent "
                      "blocks, N(0, s^2) the rest), uniform (Section 5.2 literally: U(-s, s); "
                      "does not learn at 25k pairs) or glorot (Keras' Glorot uniform).")
    flags.DEFINE_float("init_scale", _MODEL.init_scale,
                       "AF-DMN: s of --initialization: esim's N(0, s^2), uniform's U(-s, s) "
                       "(Section 5.2: 0.01).", lower_bound=0.0)


@_once
def define_reading_flags():
    """What every program that reads data needs: TFDS's directory and the batch size."""
    flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
    flags.DEFINE_integer("batch_size", _DATA.batch_size, "Global batch size.", lower_bound=1)


@_once
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
    flags.DEFINE_enum("batching", _DATA.batching, BATCHINGS, "Training batches: shuffled "
                      "pairs sorted by premise length within chunks of 50 batches (32% "
                      "padding, full batches), plain shuffled batches (59%), pairs of similar "
                      "premise length (32%) or of similar premise and hypothesis length (7%, "
                      "label-skewed); SNLI 25k dev 71.0/70.4/69.1/67.5% (FIDELITY row 44).")
    flags.DEFINE_boolean("pad_to_bucket", _DATA.pad_to_bucket, "Pad batches to their length "
                         "bucket's boundary (fewer shapes for XLA).")
    flags.DEFINE_boolean("deterministic", _DATA.deterministic, "Deterministic TF ops and "
                         "input order (same seed, same data -> same run).")
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


@_once
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


@_once
def define_workdir_flag():
    flags.DEFINE_string("workdir", None, "Run directory of experiments.train: configuration, "
                        "vocabulary, checkpoints, TensorBoard logs, best model.")


@_once
def define_finished_workdir_flag():
    """--workdir of the programs that read a finished run (or an export): it must exist."""
    flags.DEFINE_string("workdir", None, "A finished experiments.train run directory, or an "
                        "export of experiments.export.")
    require_existing("workdir", directory=True)


@_once
def define_output_flag():
    flags.DEFINE_string("output", None, "Write the results to this JSON file.")


def model_config(values=FLAGS, **overrides):
    """The `DSANConfig` the model flags describe; a bad combination raises
    `flags.ValidationError` with one sentence."""
    fields = [f.name for f in dataclasses.fields(DSANConfig) if f.name not in _NOT_MODEL_FLAGS]
    config = {name: values[name].value for name in fields}
    if "model" in values:  # flags left unset take the model's paper values
        config.update({name: value for name, value in
                       MODEL_DEFAULTS.get(values["model"].value, {}).items()
                       if not values[name].present})
    if ("embeddings" in values and values["embeddings"].value == "random"
            and not values["trainable_embeddings"].present):
        config["trainable_embeddings"] = True  # random vectors must be learned
    config.update(overrides)
    try:
        built = DSANConfig(**config)
        if "model" in values:
            check_model(values["model"].value, built)
        return built
    except ValueError as error:
        raise flags.ValidationError(f"bad model flags: {error}") from None


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
        return ExperimentConfig(
            model=values["model"].value, model_config=model_config(values, **model_overrides),
            data=_from_flags(DataConfig, values), training=training)
    except ValueError as error:
        raise flags.ValidationError(str(error)) from None


def flagfile_lines(values=FLAGS, exclude=(), **resolved):
    """The program's own flags (not absl's, not those in `exclude`), with `resolved` values
    replacing the given ones, as --flagfile lines that repeat the run."""
    resolved = dict(resolved)
    if "model" in values:  # the model's paper values that unset flags stood for
        for name, value in MODEL_DEFAULTS.get(values["model"].value, {}).items():
            if name in values and not values[name].present:
                resolved.setdefault(name, value)
    # absl files a `python -m` program's own flags under its script path.
    ours = [flag for module, module_flags in values.flags_by_module_dict().items()
            if module.startswith("experiments") or module.endswith(".py")
            for flag in module_flags]
    lines = []
    for flag in sorted({flag.name: flag for flag in ours}.values(), key=lambda f: f.name):
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
