"""Configuration of an experiment: which model family with which hyperparameters (each
family's own configuration class, `model_config`), the data and the training settings.
Plain Python (no TensorFlow, no Keras), so that programs can define and check their flags
without loading either.
"""

import dataclasses

from dsan_tf.models import registry
from dsan_tf.models.config import ModelConfig, check_choice

MODELS = registry.names()  # the model families (dsan_tf.models.registry.PACKAGES)
OOV_INITS = ("random", "zeros")
BATCHINGS = ("plain", "sorted_chunks", "premise_buckets", "length_buckets")
PRECISIONS = ("none", "mixed_float16", "mixed_bfloat16")
OPTIMIZERS = ("adam", "adamw")


def model_config(model, **values):
    """The configuration of family `model` (its class, `registry.family(model).config`):
    its paper's hyperparameters with `values` on top. ValueError names a bad field."""
    return registry.family(model).config(**values)


@dataclasses.dataclass
class DataConfig:
    """Where the pairs and word vectors come from and how they become batches.

    Attributes:
        train_data, dev_data, test_data: source specs (a file, `tfds:NAME/SPLIT` or
            `synthetic:word_order/SPLIT`; see `dsan_tf.data.read_examples`); None: unused.
        train_subset: train on a random subset of this many training pairs, the same for
            every model and seed (for learning curves); 0: all of them.
        tfds_data_dir: TFDS's data directory (None: TFDS's own).
        lowercase: lower-case text before tokenizing.
        min_count: keep training words seen at least this often.
        max_length: truncate sentences to this many tokens (counted); 0 or None: never.
        batch_size: the global batch size (Section 5.2: 64).
        shuffle: shuffle the training pairs every epoch.
        seed: seed of shuffling, initialisation and random word vectors.
        batching: how training pairs are batched (docs/FIDELITY.md row 44):
            "sorted_chunks", shuffled pairs cut into chunks of 50 batches, each sorted by
            premise length, then batched and the batches shuffled (32% padding, every batch
            full but the last, label-balanced); "plain", shuffled pairs padded to each
            batch's longest sentence (59% padding); "premise_buckets", pairs of similar
            premise length (32%; SNLI gives every premise a hypothesis of each label);
            "length_buckets", by premise and hypothesis length (7% padding, but a
            hypothesis's length predicts its label). Both bucketings end every epoch with
            their partial batches (14 and 124 at the 25k setting). SNLI dev at that
            setting, seed 0: 71.0, 70.4, 69.1 and 67.5%. Evaluation always uses length
            buckets.
        pad_to_bucket: pad batches to their length bucket's boundary (fewer shapes; the
            `tf.data` batches of an uncompiled step).
        bounded_shapes: batch in NumPy (`dsan_tf.data.batching`) to a small fixed set of
            shapes, lengths from a grid fitted to the data and full batches (partial ones
            filled with rows of weight 0), in the same order with or without TensorFlow;
            None: when the training step is compiled (`TrainingConfig.jit_compile`: JAX's
            default), since XLA compiles once per shape (docs/PERFORMANCE.md).
        deterministic: deterministic TF ops and input order.
        embeddings: a GloVe-format file, `glove:NAME` (downloaded) or "random"/None.
        embeddings_cache_dir: cache of matrices read from vector files.
        extend_vocabulary: give ids to dev/test words the vector file covers.
        vocab_from_vectors: also give ids to the vector file's first N words.
        oov_init: vectors of words the file lacks: "random" U(±oov_scale) or "zeros".
        oov_scale: range of random vectors (0.05; AF-DMN, Section 5.2: 0.01).
    """

    train_data: str | None = None
    dev_data: str | None = None
    test_data: str | None = None
    train_subset: int = 0
    tfds_data_dir: str | None = None
    lowercase: bool = False
    min_count: int = 1
    max_length: int | None = 256
    batch_size: int = 64
    shuffle: bool = True
    seed: int = 0
    batching: str = "sorted_chunks"
    pad_to_bucket: bool = False
    bounded_shapes: bool | None = None
    deterministic: bool = True
    embeddings: str | None = None
    embeddings_cache_dir: str = "~/.cache/dsan_tf"
    extend_vocabulary: bool = True
    vocab_from_vectors: int = 0
    oov_init: str = "random"
    oov_scale: float = 0.05

    def __post_init__(self):
        if self.train_subset < 0:
            raise ValueError(f"train_subset must be >= 0, got {self.train_subset}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}.")
        check_choice("oov_init", self.oov_init, OOV_INITS)
        check_choice("batching", self.batching, BATCHINGS)


@dataclasses.dataclass
class TrainingConfig:
    """How the model is optimised (DSAN, Section 5.2: Adam, learning rate 1e-3; the
    Gaussian Transformer: AdamWR, Loshchilov & Hutter 2017).

    Attributes:
        learning_rate: the learning rate (with restarts, the top of each cosine cycle).
        epochs: at most this many epochs.
        patience: stop after this many epochs without a better dev accuracy (0: never);
            with `restart_epochs`, only at the end of a cosine cycle.
        steps_per_epoch: at most this many batches per epoch (0: all).
        schedule_epoch_pairs: how many training pairs an epoch is, for everything counted
            in epochs (dev evaluation, `patience`, `restart_epochs`, `halve_on_dev_drop`,
            `epochs`, normalized weight decay): 0, one pass over the training data (a
            schedule carried to another data size by epochs); N, N pairs (carried by
            examples seen: 549,367 is SNLI's training set, an epoch of the papers), the
            batches drawn from the shuffled data repeated. docs/TRAINING.md, "Schedules".
        jit_compile: compile the training step (XLA; `torch.compile` on PyTorch); None:
            what pays on the backend (`dsan_tf.optimization.default_jit_compile`).
        mixed_precision: one of `PRECISIONS`.
        optimizer: "adam" or "adamw" (decoupled weight decay).
        normalized_weight_decay: AdamW's λ_norm; the decay per step is
            λ_norm·sqrt(b / (B·T)) for batch b, B training pairs and T epochs per cycle.
        restart_epochs: T, epochs per cosine cycle of the learning rate, restarted at the
            top each time (SGDR); 0: a constant learning rate.
        min_learning_rate: the bottom of each cosine cycle.
        halve_on_dev_drop: halve the learning rate after an epoch whose dev accuracy fell
            (AF-DMN, Section 5.2).
    """

    learning_rate: float = 1e-3
    epochs: int = 20
    patience: int = 0
    steps_per_epoch: int = 0
    schedule_epoch_pairs: int = 0
    jit_compile: bool | None = None
    mixed_precision: str = "none"
    optimizer: str = "adam"
    normalized_weight_decay: float = 0.0
    restart_epochs: int = 0
    min_learning_rate: float = 0.0
    halve_on_dev_drop: bool = False

    def __post_init__(self):
        if self.halve_on_dev_drop and self.restart_epochs:
            raise ValueError("halve_on_dev_drop needs a constant learning rate, not "
                             "restart_epochs.")
        check_choice("mixed_precision", self.mixed_precision, PRECISIONS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.normalized_weight_decay < 0 or self.restart_epochs < 0:
            raise ValueError("normalized_weight_decay and restart_epochs must be >= 0.")
        if not 0 <= self.min_learning_rate <= self.learning_rate:
            raise ValueError("min_learning_rate must be in [0, learning_rate].")
        if self.schedule_epoch_pairs < 0 or self.steps_per_epoch < 0:
            raise ValueError("schedule_epoch_pairs and steps_per_epoch must be >= 0.")
        if self.schedule_epoch_pairs and self.steps_per_epoch:
            raise ValueError("give schedule_epoch_pairs (an epoch of N pairs) or "
                             "steps_per_epoch (a cap on the batches of a pass), not both.")

    def epoch_steps(self, batch_size, train_size=None):
        """Training steps in one epoch: of `schedule_epoch_pairs` pairs, else of one pass
        over `train_size` pairs cut to `steps_per_epoch` (None when neither is known)."""
        if self.schedule_epoch_pairs:
            return -(-self.schedule_epoch_pairs // batch_size)
        passes = -(-train_size // batch_size) if train_size else None
        return (min(self.steps_per_epoch, passes or self.steps_per_epoch)
                if self.steps_per_epoch else passes)


@dataclasses.dataclass
class ExperimentConfig:
    """Everything `dsan_tf.task.NLITask` builds an experiment from.

    Attributes:
        model: one of `MODELS`.
        model_config: the model family's configuration; None: `model_config(model)`, its
            paper's hyperparameters.
        data: `DataConfig`.
        training: `TrainingConfig`.
    """

    model: str = registry.DEFAULT
    model_config: ModelConfig | None = None
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)

    def __post_init__(self):
        if self.model_config is None:
            self.model_config = model_config(self.model)
        registry.check_config(self.model, self.model_config)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """The configuration `to_dict` gave (JSON-safe: tuples may come back as lists).
        ValueError names an unknown or bad field."""
        values = dict(values)
        model = values.pop("model", registry.DEFAULT)
        parts = {"data": DataConfig, "training": TrainingConfig}
        unknown = sorted(set(values) - set(parts) - {"model_config"})
        if unknown:
            raise ValueError(f"unknown ExperimentConfig field(s): {', '.join(unknown)}.")
        for name, part in parts.items():
            known = {field.name for field in dataclasses.fields(part)}
            extra = sorted(set(values.get(name, {})) - known)
            if extra:
                raise ValueError(f"unknown {part.__name__} field(s): {', '.join(extra)}.")
        return cls(model=model,
                   model_config=registry.family(model).config.from_dict(
                       values.get("model_config") or {}),
                   **{name: part(**values.get(name, {})) for name, part in parts.items()})


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is carried out, beside what it trains (`ExperimentConfig`).

    Args:
        strategy: "default", "mirrored", "multi_worker" or "tpu" (tf.distribute).
        tpu: the TPU's name or grpc:// address for strategy "tpu" ("" for this VM's).
        logical_cpus: split the CPU into this many logical devices (0 or 1: don't).
        log_every_steps: TensorBoard's training summaries every N steps.
        probe_sentence: log this sentence's analysis figures at every epoch end.
        export_dir: export the best model to EXPORT_DIR/<next version>/ at the end.
        compile_ahead: before the first epoch, trace (TensorFlow) or compile (XLA) the
            training and evaluation steps for every batch shape an epoch will use, so that
            no epoch pays for it; the state is restored afterwards.
        compilation_cache: JAX's persistent compilation cache in a `jax` folder of the
            data's `embeddings_cache_dir`: a repeated or resumed run loads its compiled
            steps instead of compiling them again.
    """

    strategy: str = "default"
    tpu: str = ""
    logical_cpus: int = 0
    log_every_steps: int = 100
    probe_sentence: str | None = None
    export_dir: str | None = None
    compile_ahead: bool = True
    compilation_cache: bool = True
