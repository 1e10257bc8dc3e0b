"""Configuration of an experiment: which model family with which hyperparameters (each
family's own configuration class, `model_config`), the data and the training settings.
Plain Python (no TensorFlow, no Keras), so that programs can define and check their flags
without loading either.
"""

import dataclasses

from dsan_tf.common.choices import CACHE_DIR
from dsan_tf.models import registry
from dsan_tf.models.config import (
    BATCH_SIZE, LEARNING_RATE, ModelConfig, absolute_paths, check_fields, documented,
    hyperparameter, local_files, typed_value)

MODELS = registry.names()  # the model families (dsan_tf.models.registry.PACKAGES)
OOV_INITS = ("random", "zeros")
BATCHINGS = ("plain", "sorted_chunks", "premise_buckets", "length_buckets")
PRECISIONS = ("none", "mixed_float16", "mixed_bfloat16")
OPTIMIZERS = ("adam", "adamw")
# Unset steps_per_execution under JAX on an accelerator (docs/PERFORMANCE.md, "The GPU check").
ACCELERATOR_STEPS_PER_EXECUTION = 32
# Source specs that name no local file (dsan_tf.data.sources).
DATA_PREFIXES = ("tfds:", "synthetic:")


def model_config(model, **values):
    """The configuration of family `model` (its class, `registry.family(model).config`):
    its paper's hyperparameters with `values` on top. ValueError names a bad field."""
    return registry.family(model).config(**values)


@documented
@dataclasses.dataclass
class DataConfig:
    """Where the pairs and word vectors come from and how they become batches. Source specs
    are a file, `tfds:NAME/SPLIT` or `synthetic:word_order/SPLIT` (`dsan_tf.data.read_examples`)."""

    train_data: str | None = hyperparameter(
        None, "Training data source spec: a file, tfds:NAME/SPLIT or "
        "synthetic:word_order/SPLIT.", exists="file", prefixes=DATA_PREFIXES)
    dev_data: str | None = hyperparameter(
        None, "Development data source spec (model selection).", exists="file",
        prefixes=DATA_PREFIXES)
    test_data: str | None = hyperparameter(
        None, "Test data source spec (evaluated once at the end).", exists="file",
        prefixes=DATA_PREFIXES)
    train_subset: int = hyperparameter(
        0, "Train on a random subset of this many train_data pairs, the same whatever the "
        "seed and model (learning curves); 0: all.", lower_bound=0)
    dev_subset: int = hyperparameter(
        0, "Score a random subset of this many dev_data pairs (each epoch's model selection "
        "and the run's dev accuracy), the same whatever the seed and model; 0: all.",
        lower_bound=0)
    tfds_data_dir: str | None = hyperparameter(
        None, "TFDS data directory (unset: TFDS's own).", path="folder")
    lowercase: bool = hyperparameter(
        False, "Lower-case text before tokenizing (GloVe 840B is cased: keep false).")
    min_count: int = hyperparameter(
        1, "Keep training words seen at least this often.", lower_bound=1)
    max_length: int | None = hyperparameter(
        256, "Truncate sentences to this many tokens (counted and reported); 0: never.",
        lower_bound=0)
    batch_size: int = hyperparameter(BATCH_SIZE, "Batch size (Section 5.2: 64).",
                                     lower_bound=1)
    shuffle: bool = hyperparameter(
        True, "Shuffle the training pairs every epoch (false: file order).")
    seed: int = hyperparameter(
        0, "Seed of shuffling, initialisation and random word vectors.")
    batching: str = hyperparameter(
        "sorted_chunks", "Training batches: sorted_chunks, shuffled pairs sorted by premise "
        "length within chunks of 50 batches, the batches shuffled (32% padding, full "
        "batches); plain, shuffled batches (59%); premise_buckets, pairs of similar premise "
        "length (32%); length_buckets, of similar premise and hypothesis length (7%, but a "
        "hypothesis's length predicts its label). SNLI 25k dev, seed 0: 71.0/70.4/69.1/67.5% "
        "(docs/FIDELITY.md#training-batches). Evaluation always uses length buckets.",
        choices=BATCHINGS)
    deterministic: bool = hyperparameter(
        True, "Deterministic TF ops and input order (same seed, same data: same run).")
    embeddings: str | None = hyperparameter(
        None, "Word vectors: a GloVe-format file (.txt/.gz/.zip), glove:840B.300d "
        "(downloaded once into embeddings_cache_dir) or random (trained from scratch).",
        exists="file", prefixes=("glove:",), values=("random",))
    embeddings_cache_dir: str = hyperparameter(
        CACHE_DIR, "Cache of embedding matrices read from vector files (and JAX's "
        "compiled steps).", path="folder")
    extend_vocabulary: bool = hyperparameter(
        True, "Give ids to the dev/test words that the embeddings have a vector for (they "
        "would otherwise all be the one unknown word).")
    vocab_from_vectors: int = hyperparameter(
        0, "Also give ids to the first N words of the embeddings file (GloVe is ordered by "
        "frequency), so an exported model covers unseen text.", lower_bound=0)
    oov_init: str = hyperparameter(
        "random", "Vectors of words missing from the vector file: U(-oov_scale, oov_scale) "
        "(random) or zeros.", choices=OOV_INITS)
    oov_scale: float = hyperparameter(
        0.05, "Range of random vectors: U(-oov_scale, oov_scale) (AF-DMN, Section 5.2: "
        "0.01).", lower_bound=0.0)

    def __post_init__(self):
        check_fields(self)


@documented
@dataclasses.dataclass
class TrainingConfig:
    """How the model is optimised (DSAN, Section 5.2: Adam, learning rate 1e-3; the
    Gaussian Transformer: AdamWR, Loshchilov & Hutter 2017)."""

    learning_rate: float = hyperparameter(
        LEARNING_RATE, "Learning rate (with restart_epochs, the top of each cosine cycle).",
        lower_bound=0.0)
    epochs: int = hyperparameter(
        20, "Training epochs (at most, with patience). A finished run given more trains "
        "on from its last epoch.", lower_bound=1)
    patience: int = hyperparameter(
        0, "Stop when dev accuracy has not improved for this many epochs (0: train all "
        "epochs); the best epoch's model is kept. With restart_epochs it stops only at the "
        "end of a cosine cycle.", lower_bound=0)
    steps_per_epoch: int = hyperparameter(
        0, "Train on at most this many batches per epoch (0: all of them).", lower_bound=0)
    schedule_epoch_pairs: int = hyperparameter(
        0, "How many training pairs an epoch is, for all that counts epochs (dev checks, "
        "patience, restart_epochs, halve_on_dev_drop, epochs, normalized weight decay): 0, "
        "one pass over train_data (schedules carried by epochs, the study's choice); N, N "
        "pairs, the batches drawn from the shuffled data repeated (carried by examples "
        "seen: 549367 is an epoch of full SNLI, the papers' own). docs/TRAINING.md, "
        "\"Schedules\".", lower_bound=0)
    mixed_precision: str = hyperparameter(
        "none", "Compute in half precision, keep float32 weights. For GPUs with fast half "
        "precision (float16: Volta and later; bfloat16: Ampere and later, TPUs); Pascal "
        "cards such as the paper's GTX 1080Ti are slower in float16.", choices=PRECISIONS)
    optimizer: str = hyperparameter(
        "adam", "Adam (DSAN) or AdamW, Adam with decoupled weight decay (with "
        "restart_epochs: AdamWR, the Gaussian Transformer's).", choices=OPTIMIZERS)
    normalized_weight_decay: float = hyperparameter(
        0.0, "AdamW: normalized weight decay lambda_norm; per step lambda_norm * sqrt(b / "
        "(B * T)) for batch b, B training pairs and T epochs per cycle.", lower_bound=0.0)
    restart_epochs: int = hyperparameter(
        0, "Cosine learning-rate cycles of this many epochs, restarted at the top (SGDR; "
        "0: a constant learning rate).", lower_bound=0)
    min_learning_rate: float = hyperparameter(
        0.0, "Bottom of each cosine learning-rate cycle.", lower_bound=0.0)
    halve_on_dev_drop: bool = hyperparameter(
        False, "Halve the learning rate after an epoch whose dev accuracy fell (AF-DMN, "
        "Section 5.2).")

    def __post_init__(self):
        check_fields(self)
        if self.halve_on_dev_drop and self.restart_epochs:
            raise ValueError("halve_on_dev_drop needs a constant learning rate, not "
                             "restart_epochs.")
        if not self.min_learning_rate <= self.learning_rate:
            raise ValueError("min_learning_rate must be in [0, learning_rate].")
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

    def epochs_may_change(self):
        """Whether `epochs` can change without changing the epochs already trained: not
        when the weight decay is normalized by them (AdamW without restarts)."""
        return not (self.optimizer == "adamw" and self.normalized_weight_decay
                    and not self.restart_epochs)


@dataclasses.dataclass
class ExperimentConfig:
    """Everything `dsan_tf.core.task.NLITask` builds an experiment from: the one
    description of a run (its run directory records it as config.json and compares a
    re-run with it).

    Attributes:
        model: one of `MODELS`.
        model_config: the model family's configuration; None: `model_config(model)`, its
            paper's hyperparameters.
        data: `DataConfig`.
        training: `TrainingConfig`.

    Every field has one name across the four parts (a flag of that name in the programs):
    `flat()` and `from_flat` see the configuration as {name: value}, `named` starts
    from a named training configuration (`dsan_tf.configs()`).

    Examples:
    ```python
    from dsan_tf.core.config import ExperimentConfig

    # The demo's flagfile (`--config=demo`), with 3 epochs and 2 heads on top.
    config = ExperimentConfig.named("demo", epochs=3, num_heads=2)
    assert (config.training.epochs, config.model_config.num_heads) == (3, 2)
    assert config.flat()["embedding_dim"] == 32  # the demo's, not the paper's 300
    ```
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
        """The configuration `to_dict` gave (JSON-safe: tuples may come back as lists; a
        record's "policy", and the `STEP_CHOICES` fields an older record keeps in its
        parts, are `RunPolicy.from_record`'s). ValueError names an unknown or bad field."""
        values = dict(values)
        model = values.pop("model", registry.DEFAULT)
        values.pop("policy", None)  # how it ran: `RunPolicy.from_record`
        values.pop("outputs", None)  # what it wrote: `RunOutputs`
        parts = {"data": DataConfig, "training": TrainingConfig}
        for name in parts:  # a record of before the policy had its own part
            if isinstance(values.get(name), dict):
                values[name] = {n: v for n, v in values[name].items()
                                if n not in STEP_CHOICES + RETIRED}
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

    def flat(self):
        """{field name: value} of every part: "model", the family's fields, data's and
        training's (the names of the flags)."""
        return {"model": self.model, **dataclasses.asdict(self.model_config),
                **dataclasses.asdict(self.data), **dataclasses.asdict(self.training)}

    @classmethod
    def from_flat(cls, values, lenient=()):
        """The configuration of {field name: value} (`flat()`'s names); fields left out
        take the family's, data's and training's defaults.

        Args:
            values: {name: value}; "model" picks the family (default: DSAN).
            lenient: names that may be left out when the chosen family has no such field
                (a named configuration's or a flagfile's fields of another family); any other name that
                is no field raises ValueError.
        """
        values = dict(values)
        model = values.pop("model", registry.DEFAULT)
        family = registry.family(model).config
        parts = {"model_config": family, "data": DataConfig, "training": TrainingConfig}
        names = {name: {f.name for f in dataclasses.fields(part)}
                 for name, part in parts.items()}
        unknown = sorted(n for n in values if not any(n in known for known in names.values()))
        unknown = [n for n in unknown if n not in lenient or not _any_family_has(n)]
        if unknown:
            raise ValueError(f"no field {', '.join(unknown)} in the configuration of model "
                             f"{model!r} (dsan_tf.core.config: model, its "
                             "model_config, data, training).")
        return cls(model=model, **{
            name: part(**{n: v for n, v in values.items() if n in names[name]})
            for name, part in parts.items()})

    def replace(self, **overrides):
        """This configuration with the fields `overrides` names changed (`flat()`'s
        names); a new `model` keeps the fields its family shares and drops the others."""
        return ExperimentConfig.from_flat({**self.flat(), **overrides}, lenient=self.flat())

    @classmethod
    def named(cls, name, **overrides):
        """The named training configuration (`dsan_tf.configs()`: the papers'
        configurations, the study's configuration, the demo) with `overrides` by field name on
        top."""
        values = named_values(name)
        unknown = sorted(set(overrides) - set(ExperimentConfig.field_names()))
        if unknown:
            raise ValueError(f"no field {', '.join(unknown)} in any configuration "
                             "(dsan_tf.core.config).")
        return cls.from_flat({**values, **overrides},
                             lenient=set(values) - set(overrides))

    @staticmethod
    def field_names():
        """Every field name of every part and family (the flags' names)."""
        names = ["model", *(f.name for f in dataclasses.fields(DataConfig)),
                 *(f.name for f in dataclasses.fields(TrainingConfig))]
        for family in MODELS:
            names += [f.name for f in dataclasses.fields(registry.family(family).config)]
        return list(dict.fromkeys(names))

    def absolute(self, base=None):
        """This configuration with every local path (data, word vectors, caches) absolute
        from `base` (default: this process's folder), as a run on another node must read
        them: a named configuration's `../shared/data` is relative to where it is used."""
        return dataclasses.replace(
            self, model_config=absolute_paths(self.model_config, base),
            data=absolute_paths(self.data, base), training=absolute_paths(self.training, base))

    def local_files(self):
        """The files on this machine that a run of this configuration reads."""
        return [*local_files(self.model_config), *local_files(self.data),
                *local_files(self.training)]

    def resolved(self):
        """This configuration with `trainable_embeddings` decided where it is unset:
        trained when the vectors start random (`embeddings` random or none). A run
        directory records the resolved configuration (how it runs is `RunPolicy`'s)."""
        trainable = self.model_config.trainable_embeddings
        if trainable is None:
            trainable = self.data.embeddings in (None, "random")
        return dataclasses.replace(self, model_config=dataclasses.replace(
            self.model_config, trainable_embeddings=trainable))

    def differences(self, other):
        """[(field name, this value, `other`'s value)] of the fields that differ, in
        `flat()`'s order (a field one of them lacks counts as None there)."""
        mine, theirs = self.flat(), other.flat()
        names = list(dict.fromkeys([*mine, *theirs]))
        return [(n, mine.get(n), theirs.get(n)) for n in names
                if _comparable(mine.get(n)) != _comparable(theirs.get(n))]


def named_values(name):
    """{field name: value} of the named training configuration `name` (`dsan_tf.configs()`):
    its flagfile's flags (`registry.config_flags`, its base's under them) read with their
    fields' types, "model" its family; ValueError naming the flagfile's flag otherwise."""
    fields = {}
    for part in (DataConfig, TrainingConfig, RunPolicy, RunOutputs,
                 *(registry.family(m).config for m in MODELS)):
        for field in dataclasses.fields(part):
            fields.setdefault(field.name, field)
    values = {}
    for key, value in registry.config_flags(name).items():
        if key == "model":
            values[key] = value
        elif key not in fields:
            raise ValueError(f"configuration {name!r} sets --{key}, which is no field of "
                             "any configuration (dsan_tf.core.config).")
        else:
            values[key] = typed_value(fields[key], value)
    return values


def _comparable(value):
    return list(value) if isinstance(value, tuple) else value


def _any_family_has(name):
    return any(name in {f.name for f in dataclasses.fields(registry.family(family).config)}
               for family in MODELS)


@documented
@dataclasses.dataclass(frozen=True)
class RunPolicy:
    """How a run's steps run on this backend and device, beside what it trains
    (`ExperimentConfig`): how they are compiled and batched. None of it changes the
    function trained; a re-run may change any of it but `SAME_RUN` (those change the
    batches a resumed run would draw). What a run logs, probes and exports is its own part
    (`RunOutputs`).

    The fields left unset (None) are decided once, at the start of a run, by `resolved`
    from the Keras backend and the device; a run directory records the resolved policy
    in config.json ("policy") and prints it in one line (`describe`).

    Examples:
    ```python
    from dsan_tf.core.config import RunPolicy

    policy = RunPolicy(jit_compile=False, steps_per_execution=4).resolved()
    assert policy.one_pass is not None  # decided: on an accelerator, off on a CPU
    print(policy.describe())  # "how it runs: jit_compile off, ..."
    ```
    """

    jit_compile: bool | None = hyperparameter(
        None, "Compile the training step (XLA; torch.compile on PyTorch). Unset: what pays "
        "on the backend, off on TensorFlow and PyTorch, on under JAX.", topic="training")
    one_pass: bool | None = hyperparameter(
        None, "Encode premise and hypothesis in one call of the sentence encoder, as one "
        "batch of 2B padded to the longer side: half the compiled program (a GPU's step costs "
        "its program's size, not its tokens), more padded tokens. The same function of the "
        "weights; dropout draws differ. Unset: on a GPU or TPU, off on a CPU "
        "(docs/PERFORMANCE.md).", topic="training")
    steps_per_execution: int | None = hyperparameter(
        None, "Training steps per call of the compiled step function (Keras' "
        "`steps_per_execution`): callbacks see every Nth batch. On JAX it is a loop of the "
        "one compiled step, so it adds no compile and takes any batch shapes; it takes the "
        "host's per-step work (callbacks, logs) off steps bound by overhead. Unset: "
        f"{ACCELERATOR_STEPS_PER_EXECUTION} under JAX on a GPU or TPU, else 1 "
        "(docs/PERFORMANCE.md).", lower_bound=1, topic="training")
    sentence_programs: bool | None = hyperparameter(
        None, "On JAX, make a sentence-pair model's steps of programs per sentence length "
        "(the encoder's forward, backward and inference passes) and programs compiled once "
        "(the head, the optimizer's update), so that batch shapes sharing a length share "
        "its programs: fewer seconds compiling, a few dispatches more a step. The same "
        "numbers as one program a step. With steps_per_execution 1 only. Unset: on under "
        "JAX on a CPU (docs/PERFORMANCE.md).", topic="training")
    bounded_shapes: bool | None = hyperparameter(
        None, "Batch in NumPy (dsan_tf.data.batching) to a small fixed set of shapes, "
        "lengths from a grid fitted to the data and full batches (partial ones filled with "
        "rows of weight 0), the same with or without TensorFlow. Unset: when the training "
        "step is compiled (jit_compile, JAX's default), since XLA compiles once per shape "
        "(docs/PERFORMANCE.md).", topic="data")
    shape_costs: str = hyperparameter(
        "device", "How bounded shapes are chosen: device, the training shapes (1 to 3, or "
        "the padding grid of 12) that cost least in compiles plus steps over the run on this "
        "device, by figures measured on a GPU and a CPU (dsan_tf.data.costs); padding, the "
        "grid of 4 x 3 lengths that pads least; or a file of `benchmarks.shape_costs` "
        "measurements to fit. Evaluation uses the training shapes. With per-length programs "
        "(sentence_programs) none of these: one grid of lengths for both sides.", exists="file",
        values=("device", "padding"), topic="data")
    compile_ahead: bool = hyperparameter(
        True, "Before the first epoch, trace or compile the training and evaluation steps "
        "for every batch shape an epoch uses (the model's state is restored afterwards), "
        "so no epoch pays for it.", topic="training")
    compilation_cache: bool = hyperparameter(
        True, "JAX: keep compiled steps in EMBEDDINGS_CACHE_DIR/jax, so that a repeated or "
        "resumed run does not compile them again.", topic="training")
    def __post_init__(self):
        check_fields(self)

    # Fields whose change would change the batches a resumed run draws (NumPy's bounded
    # shapes or tf.data's order, and the compiled step that decides them): refused there.
    SAME_RUN = ("jit_compile", "bounded_shapes")

    def resolved(self):
        """This policy with its unset (None) fields decided for the current Keras backend
        and device: `jit_compile` (what pays there), `one_pass` (on an accelerator),
        `steps_per_execution` (JAX on an accelerator), `sentence_programs` (JAX on a CPU,
        with a compiled step) and `bounded_shapes` (with a compiled step)."""
        from dsan_tf.common.frameworks import keras

        from dsan_tf.core.optimization import default_jit_compile
        from dsan_tf.data.costs import device_platform

        jax, cpu = keras.backend.backend() == "jax", device_platform() == "cpu"
        jit = default_jit_compile() if self.jit_compile is None else self.jit_compile
        programs = self.sentence_programs
        if programs is None:
            from dsan_tf.speed.sentence_programs import default

            programs = default()
        return dataclasses.replace(
            self, jit_compile=jit,
            one_pass=not cpu if self.one_pass is None else self.one_pass,
            steps_per_execution=(ACCELERATOR_STEPS_PER_EXECUTION if jax and not cpu else 1)
            if self.steps_per_execution is None else self.steps_per_execution,
            sentence_programs=bool(programs and jit and jax),  # JAX's only
            bounded_shapes=jit if self.bounded_shapes is None else self.bounded_shapes)

    def describe(self):
        """The policy in one line, e.g. "how it runs: jit_compile on, one_pass off,
        steps_per_execution 1, ..." (every step choice; the others where they differ
        from their defaults)."""
        defaults = RunPolicy()
        shown = [f"{name} {'on' if value else 'off'}" if isinstance(value, bool) else
                 f"{name} {value}" for name, value in self.to_dict().items()
                 if name in STEP_CHOICES or value != getattr(defaults, name)]
        return "how it runs: " + ", ".join(shown)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, values):
        """The policy a config.json's `values` recorded: its "policy", or, in a record
        written before the policy had its own part, the fields its "training" and "data"
        parts held; None where it records none."""
        names = {field.name for field in dataclasses.fields(cls)}
        if isinstance(values.get("policy"), dict):
            return cls(**{n: v for n, v in values["policy"].items() if n in names})
        legacy = {name: value for part in ("training", "data")
                  for name, value in (values.get(part) or {}).items() if name in STEP_CHOICES}
        return cls(**legacy) if legacy else None


@documented
@dataclasses.dataclass(frozen=True)
class RunOutputs:
    """What a training run writes beside its record: TensorBoard's step summaries, a
    sentence's figures at each epoch's end, a SavedModel of its best model. None of it
    changes what is trained or how its steps run (`RunPolicy`); a re-run may change any
    of it. A run directory records it in config.json ("outputs").

    Examples:
    ```python
    from dsan_tf.core.config import RunOutputs

    outputs = RunOutputs(log_every_steps=10, export_dir="runs/demo/export")
    assert outputs.to_dict()["log_every_steps"] == 10
    ```
    """

    log_every_steps: int = hyperparameter(
        100, "TensorBoard: log training metrics every N steps.", lower_bound=1,
        topic="output")
    probe_sentence: str | None = hyperparameter(
        None, "Log the analysis figures of this sentence to TensorBoard at every epoch end "
        "(models that show a sentence's attention: dsan).", topic="output")
    export_dir: str | None = hyperparameter(
        None, "Export the best model as a SavedModel in EXPORT_DIR/<next version>/ (TF "
        "Serving's layout) at the end; given on a finished run, it exports that run.",
        topic="output")

    def __post_init__(self):
        check_fields(self)

    def to_dict(self):
        return dataclasses.asdict(self)


# The RunPolicy fields that choose how the steps are compiled and batched (shown by
# `RunPolicy.describe` whatever their values). Records written before 2026-11-29 (the
# shipped preset's, the study's) keep them in their configuration's "training" and "data"
# parts; `ExperimentConfig.from_dict` leaves them to `RunPolicy.from_record`.
STEP_CHOICES = ("jit_compile", "one_pass", "steps_per_execution", "sentence_programs",
                "bounded_shapes", "shape_costs")
# A step choice older records hold in their parts that no run makes now: passed over
# (padding a bucket's batches to its boundary changed their width, not their pairs or
# numbers). A record's "policy" is read by `RunPolicy`'s own fields alone.
RETIRED = ("pad_to_bucket",)
