"""Configuration: the paper's hyperparameters, the ablation/comparison switches, and the
data and training settings of an experiment. Plain Python (no TensorFlow), so that
programs can define and check their flags without loading TensorFlow.
"""

import dataclasses
import json

MODELS = ("dsan", "disan", "cbow", "gaussian_transformer", "afdmn")
INITIALIZATIONS = ("esim", "uniform", "glorot")  # AF-DMN's (dsan_tf.models.afdmn)
PRIORS = ("linear", "gaussian", "gaussian_variant", "zipf", "learned", "none")
FUSIONS = ("projected", "raw")
POOLINGS = ("multi_dim_max", "multi_dim", "max")
QKV_NORMS = ("per_head", "full")
OOV_INITS = ("random", "zeros")
BATCHINGS = ("plain", "sorted_chunks", "premise_buckets", "length_buckets")
PRECISIONS = ("none", "mixed_float16", "mixed_bfloat16")
OPTIMIZERS = ("adam", "adamw")
# Where a model's paper differs from DSAN's defaults (DSANConfig fields): the Gaussian
# Transformer's implementation paragraph (H = 4) and Table 1 (vii) (the prior of eq. (4)).
# AF-DMN's Section 5.2: dropout 0.2, GloVe updated during training.
MODEL_DEFAULTS = {"gaussian_transformer": {"num_heads": 4,
                                           "distance_prior": "gaussian_variant"},
                  "afdmn": {"dropout": 0.2, "trainable_embeddings": True}}


@dataclasses.dataclass
class DSANConfig:
    """Hyperparameters of the models (`dsan_tf.build_model`); defaults are the paper's (Im & Cho, 2017: Section 4.1
    for the classifier, 4.2.4 for d_ff = 4·d_e, 5.2 for d_e, h, α, dropout and LayerNorm).

    Attributes:
        vocab_size: int or None; None takes it from the embedding matrix.
        embedding_dim: d_e, width of the word vectors and of each block (300).
        num_heads: h (5); d_k = embedding_dim / num_heads.
        ffn_dim: d_ff (4·d_e = 1200).
        distance_prior: how attention favours nearby words, one of
            `PRIORS`: "linear" is the paper's α·M_dis, "none" its Table 1
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
        model_dim: Gaussian Transformer: d_model, the width inside the blocks (120).
        num_encoder_blocks: Gaussian Transformer: M (3).
        num_interaction_blocks: Gaussian Transformer: N (2).
        char_dim: Gaussian Transformer: d_c, width of the character 5-gram vectors (30).
        lstm_units: AF-DMN: h, the width of its LSTMs (per direction) and MLPs (300).
        matching_blocks: AF-DMN: k, computational blocks (3 for SNLI, 2 for MultiNLI).
        initialization: AF-DMN: how its encoder's and blocks' weights start, one of
            `INITIALIZATIONS`: "esim" (ESIM's reference code, whose link Section 5.7 gives;
            docs/FIDELITY.md row 63), "uniform" (U(−s, s), Section 5.2 read literally) or
            "glorot" (Keras' Glorot uniform).
        init_scale: AF-DMN: s, ESIM's N(0, s²) and the literal U(−s, s) (0.01).

    The Gaussian Transformer reads `embedding_dim` as d_w, `num_heads` as H,
    `distance_prior` for its self-attentions and `dropout` for every sub-layer; its FFN
    and classifier are d_model wide (eq. (11), (17)), so `ffn_dim` and `classifier_units`
    do not apply. `for_model` gives each model's paper defaults.
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
    model_dim: int = 120
    num_encoder_blocks: int = 3
    num_interaction_blocks: int = 2
    char_dim: int = 30
    lstm_units: int = 300
    matching_blocks: int = 3
    initialization: str = "esim"
    init_scale: float = 0.01

    def __post_init__(self):
        self.validate()

    @classmethod
    def for_model(cls, model, **values):
        """The paper's configuration of `model` (DSAN's defaults with `MODEL_DEFAULTS`),
        with `values` on top."""
        return cls(**{**MODEL_DEFAULTS.get(model, {}), **values})

    def validate(self):
        """Raises ValueError, naming the field, when a value cannot work."""
        if self.embedding_dim <= 0 or self.num_heads <= 0:
            raise ValueError("embedding_dim and num_heads must be positive.")
        _check_choice("distance_prior", self.distance_prior, PRIORS)
        if self.prior_max_distance < 1:
            raise ValueError(f"prior_max_distance must be >= 1, got {self.prior_max_distance}.")
        _check_choice("fusion", self.fusion, FUSIONS)
        _check_choice("pooling", self.pooling, POOLINGS)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")
        _check_choice("qkv_norm", self.qkv_norm, QKV_NORMS)
        if self.vocab_size is not None and self.vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2 (padding and unknown), "
                             f"got {self.vocab_size}.")
        if min(self.model_dim, self.num_encoder_blocks, self.char_dim) < 1:
            raise ValueError("model_dim, num_encoder_blocks and char_dim must be positive.")
        if self.lstm_units < 1 or self.matching_blocks < 0 or self.init_scale <= 0:
            raise ValueError("lstm_units and init_scale must be positive, matching_blocks "
                             ">= 0 (init_scale=0 no longer means Keras' initialisers: "
                             "use initialization=glorot).")
        _check_choice("initialization", self.initialization, INITIALIZATIONS)
        if self.num_interaction_blocks < 0:
            raise ValueError("num_interaction_blocks must be >= 0.")

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


def check_model(model, config):
    """Raises ValueError, naming the fields, when `config` cannot build `model`: DSAN's
    heads split d_e, the Gaussian Transformer's split d_model."""
    _check_choice("model", model, MODELS)
    if model == "dsan" and config.embedding_dim % config.num_heads:
        raise ValueError(f"embedding_dim={config.embedding_dim} must be divisible by "
                         f"num_heads={config.num_heads}.")
    if model == "gaussian_transformer" and config.model_dim % config.num_heads:
        raise ValueError(f"model_dim={config.model_dim} must be divisible by "
                         f"num_heads={config.num_heads}.")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")


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
        pad_to_bucket: pad batches to their length bucket's boundary (fewer shapes).
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
        _check_choice("oov_init", self.oov_init, OOV_INITS)
        _check_choice("batching", self.batching, BATCHINGS)


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
        _check_choice("mixed_precision", self.mixed_precision, PRECISIONS)
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
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
        model_config: `DSANConfig`, the model's hyperparameters.
        data: `DataConfig`.
        training: `TrainingConfig`.
    """

    model: str = "dsan"
    model_config: DSANConfig = dataclasses.field(default_factory=DSANConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)

    def __post_init__(self):
        check_model(self.model, self.model_config)

    def to_dict(self):
        return dataclasses.asdict(self)
