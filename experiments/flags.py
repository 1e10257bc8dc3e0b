"""Every absl flag of the project, defined once. Importing this module defines them.

Model flags default to `DSANConfig`'s values (the paper's), so the two cannot drift.
"""

import dataclasses

from absl import flags

from dsan_tf.config import DSANConfig
from dsan_tf.model import MODELS
from dsan_tf.layers import FUSIONS, POOLINGS, PRIORS, QKV_NORMS

_DEFAULTS = DSANConfig()

# Model hyperparameters: one flag per DSANConfig field, same name.
flags.DEFINE_integer("embedding_dim", _DEFAULTS.embedding_dim, "d_e: word-vector and block width.")
flags.DEFINE_integer("num_heads", _DEFAULTS.num_heads, "h: attention heads (d_k = d_e / h).")
flags.DEFINE_integer("ffn_dim", _DEFAULTS.ffn_dim, "d_ff: hidden width of the position-wise FFN.")
flags.DEFINE_enum("distance_prior", _DEFAULTS.distance_prior, PRIORS,
                  "Bias favouring nearby words: linear = alpha * M_dis (paper), none (Table 1 "
                  "ablation), gaussian, gaussian_variant, zipf, learned (Gaussian Transformer).")
flags.DEFINE_float("distance_alpha", _DEFAULTS.distance_alpha,
                   "alpha: scale of the linear distance prior.")
flags.DEFINE_integer("prior_max_distance", _DEFAULTS.prior_max_distance,
                     "Learned prior: distances above this share one bias.")
flags.DEFINE_boolean("use_direction_mask", _DEFAULTS.use_direction_mask,
                     "Apply the forward/backward masks; false masks only the diagonal.")
flags.DEFINE_enum("fusion", _DEFAULTS.fusion, FUSIONS,
                  "Fusion gate on projected S^F, H^F (paper) or raw S, H (DiSAN).")
flags.DEFINE_enum("pooling", _DEFAULTS.pooling, POOLINGS,
                  "Sentence pooling: source2token + max (paper), source2token only, max only.")
flags.DEFINE_float("dropout", _DEFAULTS.dropout,
                   "Dropout on the attention output, in the fusion gate and on the classifier's "
                   "ReLU layer.")
flags.DEFINE_enum("qkv_norm", _DEFAULTS.qkv_norm, QKV_NORMS,
                  "LayerNorm of the Q, K, V projections: per head (d_k wide) or over the full "
                  "d_e-wide projection before splitting into heads.")
flags.DEFINE_integer("classifier_units", _DEFAULTS.classifier_units,
                     "Width of the classifier's ReLU layer.")
flags.DEFINE_boolean("trainable_embeddings", _DEFAULTS.trainable_embeddings,
                     "Fine-tune the word vectors (the paper keeps GloVe frozen).")
flags.DEFINE_float("layer_norm_epsilon", _DEFAULTS.layer_norm_epsilon, "LayerNorm epsilon.")

# Used only where no vocabulary exists (e.g. `experiments.summary`).
flags.DEFINE_integer("vocab_size", 2, "Vocabulary size for a model built without data.")

FLAGS = flags.FLAGS

MODEL_FLAGS = tuple(f.name for f in dataclasses.fields(DSANConfig)
                    if f.name not in ("vocab_size", "num_classes"))


def model_config(**overrides):
    """The `DSANConfig` the model flags describe; a bad combination is a one-line error."""
    values = {name: getattr(FLAGS, name) for name in MODEL_FLAGS}
    values.update(overrides)
    try:
        return DSANConfig(**values)
    except ValueError as error:
        raise flags.ValidationError(f"bad model flags: {error}") from None

# Data (dsan_tf.data): sources are a local file, tfds:NAME/SPLIT or synthetic:word_order/SPLIT.
flags.DEFINE_string("train_data", None, "Training data source spec.")
flags.DEFINE_string("dev_data", None, "Development data source spec (model selection).")
flags.DEFINE_string("test_data", None, "Test data source spec (evaluated once at the end).")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_boolean("lowercase", False,
                     "Lower-case text before tokenizing (GloVe 840B is cased: keep false).")
flags.DEFINE_integer("min_count", 1, "Keep training words seen at least this often.")
flags.DEFINE_integer("max_length", 256,
                     "Truncate sentences to this many tokens (counted and reported); 0: never.")
flags.DEFINE_integer("batch_size", 64, "Global batch size.")
flags.DEFINE_boolean("shuffle", True, "Shuffle the training pairs every epoch (false: file "
                     "order; tf.distribute reorders a seeded shuffle, so compare strategies "
                     "without it).")
flags.DEFINE_integer("seed", 0, "Seed of shuffling and initialisation.")
flags.DEFINE_boolean("pad_to_bucket", False,
                     "Pad batches to their length bucket's boundary (fewer shapes for XLA).")
flags.DEFINE_string("embeddings", None,
                    "Word vectors: a GloVe-format file (.txt/.gz/.zip), glove:840B.300d "
                    "(downloaded once into --embeddings_cache_dir) or 'random' (trained from "
                    "scratch: embeddings then default to trainable).")
flags.DEFINE_string("embeddings_cache_dir", "~/.cache/dsan_tf",
                    "Cache of embedding matrices read from vector files.")
flags.DEFINE_boolean("extend_vocabulary", True,
                     "Give ids to the dev/test words that --embeddings has a vector for (they "
                     "would otherwise all be the one unknown word).")
flags.DEFINE_integer("vocab_from_vectors", 0,
                     "Also give ids to the first N words of the --embeddings file (GloVe is "
                     "ordered by frequency), so an exported model covers unseen text.")
flags.DEFINE_enum("oov_init", "random", ["random", "zeros"],
                  "Vectors of words missing from the vector file: U(-0.05, 0.05) or zeros.")

# Runs (experiments.train / evaluate / export / predict).
flags.DEFINE_string("workdir", None, "Run directory: configuration, vocabulary, checkpoints, "
                    "TensorBoard logs, best model.")
flags.DEFINE_enum("model", "dsan", MODELS,
                  "Model: DSAN, the DiSAN baseline (Shen et al. 2017) or the CBOW baseline.")
flags.DEFINE_integer("epochs", 20, "Training epochs (at most, with --patience).")
flags.DEFINE_integer("patience", 0, "Stop when dev accuracy has not improved for this many "
                     "epochs (0: train all --epochs); the best epoch's model is kept.")
flags.DEFINE_float("learning_rate", 1e-3, "Adam learning rate.")
flags.DEFINE_integer("log_every_steps", 100, "TensorBoard: log training metrics every N steps.")
flags.DEFINE_boolean("deterministic", True,
                     "Deterministic TF ops and input order (same seed, same data -> same run).")
flags.DEFINE_boolean("jit_compile", False, "Compile the training step with XLA.")
flags.DEFINE_enum("strategy", "default", ["default", "mirrored", "multi_worker", "tpu"],
                  "tf.distribute strategy: one device, all local GPUs, several machines "
                  "(TF_CONFIG) or a TPU; --batch_size is the global batch.")
flags.DEFINE_string("tpu", "", "--strategy=tpu: the TPU's name or grpc:// address "
                    "(empty: the TPU of this VM).")
flags.DEFINE_integer("logical_cpus", 0, "Split the CPU into this many logical devices, so "
                     "that --strategy=mirrored runs without GPUs (for trying it out, tests).")
flags.DEFINE_integer("steps_per_epoch", 0, "Train on at most this many batches per epoch "
                     "(0: all of them).")
flags.DEFINE_enum("mixed_precision", "none", ["none", "mixed_float16", "mixed_bfloat16"],
                  "Compute in half precision, keep float32 weights. For GPUs with fast half "
                  "precision (float16: Volta and later; bfloat16: Ampere and later, TPUs); "
                  "Pascal cards such as the paper's GTX 1080Ti are slower in float16.")
flags.DEFINE_string("export_dir", None, "Where to write the SavedModel (train: after training).")
flags.DEFINE_multi_string("data", None, "experiments.evaluate: data source spec(s) to evaluate.")
flags.DEFINE_string("output", None, "experiments.evaluate / benchmarks: write results to this "
                    "JSON file.")
flags.DEFINE_string("premise", None, "experiments.predict: a premise.")
flags.DEFINE_string("hypothesis", None, "experiments.predict: a hypothesis.")
flags.DEFINE_string("input", None, "experiments.predict: a .jsonl file of sentence1/sentence2.")

# Benchmarks.
flags.DEFINE_float("benchmark_seconds", 2.0,
                   "experiments.benchmark: time each measurement for at least this long.")
flags.DEFINE_list("benchmark_lengths", ["16", "32"],
                  "experiments.benchmark: sentence lengths of the XLA on/off comparison.")
flags.DEFINE_list("sweep_lengths", ["8", "16", "32", "64", "128", "256", "512"],
                  "experiments.benchmark: sentence lengths of the time and memory sweep.")
flags.DEFINE_integer("pipeline_epochs", 3, "Timed passes over the data (after a warm-up).")
flags.DEFINE_integer("train_steps", 20, "Timed training steps (after a warm-up).")

# Results table (experiments.results).
flags.DEFINE_string("shared_data", "../shared/data",
                    "Directory of the shared small datasets and vectors (see its README).")
flags.DEFINE_multi_string("variants", None, "experiments.results: only these rows (default: all).")

# Analysis figures (experiments.visualize; --probe_sentence also in experiments.train).
flags.DEFINE_string("sentence", "A lady stands outside of a Mexican market.",
                    "Sentence for the single-model figures (7, 9, 10, 11).")
flags.DEFINE_string("long_sentence",
                    "A young boy in a red shirt and blue jeans is climbing up the side of a "
                    "large rock while his father watches from the grass below the cliff.",
                    "Long sentence for the two-model comparison (Figure 8).")
flags.DEFINE_string("compare_workdir", None, "A second run for Figure 8 (e.g. no distance mask).")
flags.DEFINE_string("output_dir", None, "Where experiments.visualize writes its PNG files.")
flags.DEFINE_multi_string("evaluation", None,
                          "Figure 6: an experiments.evaluate JSON file, optionally NAME=FILE.")
flags.DEFINE_string("probe_sentence", None,
                    "experiments.train: log the analysis figures of this sentence to "
                    "TensorBoard at every epoch end.")


def lengths(name):
    """The sorted positive integers of a comma-separated list flag."""
    try:
        values = sorted({int(value) for value in FLAGS[name].value})
    except ValueError:
        values = []
    if not values or values[0] < 1:
        raise flags.ValidationError(
            f"--{name} must be positive integers separated by commas, got "
            f"{','.join(FLAGS[name].value)!r}.")
    return values
