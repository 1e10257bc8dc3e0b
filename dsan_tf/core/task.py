"""The NLI experiment as one object (after TF Model Garden's `base_task.Task`): from an
`ExperimentConfig` it builds the data, the preprocessor, the word vectors, the `tf.data`
inputs, the model, its loss, metrics and optimizer. Programs (`dsan-train`,
`evaluate`, the benchmarks, `results`) call it instead of repeating the chain.

    task = NLITask(ExperimentConfig(data=DataConfig(train_data=..., dev_data=...)))
    train, _ = task.read(task.config.data.train_data, "train_data")
    preprocessor = task.build_preprocessor(train)
    model = task.compile(task.build_model(preprocessor.vocabulary_size))
    model.fit(task.build_inputs(preprocessor.encode(train), training=True), ...)
"""

import dataclasses
import functools
import os
import sys

import numpy as np

from dsan_tf import data
from dsan_tf.data import planning
from dsan_tf.core.config import ExperimentConfig, RunPolicy
from dsan_tf.core.optimization import make_optimizer
from dsan_tf.models import registry
from dsan_tf.models.registry import family


def vocabulary_summary(training_words, added, extend_vocabulary, vocab_from_vectors):
    """The log line of a vocabulary extended from a vector file: what each way added, and
    only the ways that were asked for."""
    parts = [f"{training_words:,} training words"]
    if extend_vocabulary:
        parts.append(f"{added['from_data']:,} more dev/test words that have a vector")
    if vocab_from_vectors:
        parts.append(f"{added['from_vectors']:,} more of the vector file's first "
                     f"{vocab_from_vectors:,} words")
    return "vocabulary: " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + \
        parts[-1]


@dataclasses.dataclass
class Predictions:
    """What `predict` returns, in the order of the batches: `probabilities` float32 [N, C],
    `labels` int [N] (gold), `premise_lengths` and `hypothesis_lengths` int [N] (tokens
    read)."""

    probabilities: np.ndarray
    labels: np.ndarray
    premise_lengths: np.ndarray
    hypothesis_lengths: np.ndarray


def predict(model, batches, on_batch=None):
    """The model's class probabilities (`NLIClassifier.predict_on_batch`) on `batches`
    of ({"premise", "hypothesis"}, labels) or (..., labels, sample weights)
    (`NLITask.build_inputs`; rows of weight 0 only fill a batch and are left out), on any
    Keras backend (the `tf.data` tensors become NumPy arrays first). `on_batch(size)` is called after each batch (progress).

    Returns:
        `Predictions`.
    """
    parts = {field.name: [] for field in dataclasses.fields(Predictions)}
    for inputs, labels, *weights in batches:
        inputs = {side: np.asarray(ids) for side, ids in inputs.items()}
        probabilities = np.asarray(model.predict_on_batch(inputs), "float32")
        if weights:
            real = np.asarray(weights[0]) > 0
            probabilities, labels = probabilities[real], np.asarray(labels)[real]
            inputs = {side: ids[real] for side, ids in inputs.items()}
        parts["probabilities"].append(probabilities)
        parts["labels"].append(np.asarray(labels))
        for side in ("premise", "hypothesis"):
            parts[f"{side}_lengths"].append(np.count_nonzero(inputs[side], axis=1))
        if on_batch:
            on_batch(len(parts["labels"][-1]))
    return Predictions(**{name: np.concatenate(values) if values else np.zeros(0)
                          for name, values in parts.items()})


def build_model(name=registry.DEFAULT, config=None, word_vectors=None, one_pass=False):
    """An `NLIClassifier` on the backbone of family `name`.

    Args:
        name: a registered family (`dsan_tf.models.names()`).
        config: the family's configuration (`model_config(name, ...)` of
            `dsan_tf.core.config`); its paper's hyperparameters when None. An unset
            `trainable_embeddings` trains the embeddings when no `word_vectors` are given
            and freezes given ones; its `vocab_size` may be None when they are given.
        word_vectors: optional float array [V, W] (row 0, padding, becomes zeros), W the
            family's `feature_width` (the Gaussian Transformer: word vectors and character
            5-gram vectors side by side, as `NLITask.build_model` makes them); without it
            the embeddings start random, U(-0.05, 0.05).
        one_pass: premise and hypothesis through the backbone in one call
            (`NLIClassifier`'s `one_pass`; `RunPolicy.one_pass` decides it for runs).

    Returns:
        `NLIClassifier` with int32 inputs {"premise": [B, T1], "hypothesis": [B, T2]} and
        float32 logits [B, C] in the order of `dsan_tf.common.labels.LABELS`.
    """
    from dsan_tf.models.nli_classifier import NLIClassifier

    chosen = family(name)
    config = config or chosen.config()
    registry.check_config(name, config)
    if config.trainable_embeddings is None:  # unset: random vectors must be learned
        config = dataclasses.replace(config, trainable_embeddings=word_vectors is None)
    vocabulary_size = config.vocab_size
    if word_vectors is not None:
        shape, width = np.shape(word_vectors), chosen.feature_width(config)
        if len(shape) != 2 or shape[1] != width:
            raise ValueError(f"word vectors have shape {shape}, expected [vocab_size, "
                             f"{width}] (the {name} family's feature width).")
        if vocabulary_size is not None and vocabulary_size != shape[0]:
            raise ValueError(f"vocab_size={vocabulary_size} but the word vectors have "
                             f"{shape[0]} rows.")
        vocabulary_size = shape[0]
    if vocabulary_size is None:
        raise ValueError("give the configuration's vocab_size or word vectors.")
    backbone = chosen.backbone(config, vocabulary_size)
    model = NLIClassifier(backbone, num_classes=config.num_classes,
                          layer_norm_epsilon=config.layer_norm_epsilon, name=name,
                          one_pass=one_pass, **chosen.head(config))
    if word_vectors is not None:
        backbone.set_word_vectors(word_vectors)
    return model


class NLITask:
    """Builds every part of an NLI experiment from its configuration.

    Args:
        config: `dsan_tf.core.config.ExperimentConfig`, what is trained.
        policy: `dsan_tf.core.config.RunPolicy`, how it runs (default: every choice
            unset), resolved once for the backend and device on first use (`policy`).
        log: called with one line of text per report (reading, vocabulary, vectors).
    """

    def __init__(self, config=None, policy=None, log=print):
        self.config = config or ExperimentConfig()
        self._policy = policy or RunPolicy()
        self.log = log

    @functools.cached_property
    def policy(self):
        """How it runs here: the `RunPolicy` resolved once for the current Keras backend
        and device (every unset choice decided)."""
        return self._policy.resolved()

    @property
    def cache_dir(self):
        return os.path.expanduser(self.config.data.embeddings_cache_dir)

    def read(self, spec, name="data"):
        """(examples, `ReadReport`) of a source spec; `DataError` when it holds none."""
        examples, report = data.read_examples(spec, self.config.data.tfds_data_dir)
        self.log(f"{name}: {report.summary()}")
        if not examples:
            raise data.DataError(f"--{name}={spec} holds no labelled examples.")
        return examples, report

    def subset(self, examples, split):
        """The configured `train_subset` or `dev_subset` (`split`: "train", "dev") of
        `examples`: a random subset drawn with a fixed seed (0, not the run's), so that every
        model and seed sees the same pairs, in their original order. All of them when the
        subset is 0 or not smaller."""
        size = getattr(self.config.data, f"{split}_subset")
        if not size or size >= len(examples):
            return examples
        chosen = np.sort(np.random.default_rng(0).choice(len(examples), size, replace=False))
        self.log(f"{split}_data: a random subset of {size:,} of the {len(examples):,} pairs")
        return [examples[i] for i in chosen]

    def vector_file(self):
        """The path of the configured word vectors (downloaded first for `glove:NAME`);
        None for random vectors."""
        spec = self.config.data.embeddings
        if spec in (None, "random"):
            return None
        if spec.startswith("glove:"):  # e.g. glove:840B.300d, downloaded once
            return data.download_glove("glove." + spec[len("glove:"):], self.cache_dir)
        return spec

    def build_preprocessor(self, train, others=(), vector_file=None, vocabulary=None):
        """The `NLIPreprocessor`: `vocabulary` when given (a resumed run keeps its ids);
        otherwise the training words, then the words of `others` (dev/test examples) and
        the first `vocab_from_vectors` words of `vector_file` that have a vector
        (docs/FIDELITY.md#vocabulary)."""
        settings = self.config.data
        if vocabulary is None:
            vocabulary = self._vocabulary(train, others, vector_file)
        return data.NLIPreprocessor(vocabulary, settings.max_length)

    def _vocabulary(self, train, others, vector_file):
        settings = self.config.data
        vocabulary = data.Vocabulary.from_examples(train, min_count=settings.min_count,
                                                   lowercase=settings.lowercase)
        if not vector_file or not (settings.extend_vocabulary or settings.vocab_from_vectors):
            return vocabulary
        extra = (data.Vocabulary.from_examples(others, lowercase=settings.lowercase).words
                 if settings.extend_vocabulary and others else [])
        training_words = len(vocabulary.words)
        vocabulary, added = data.extend_vocabulary(
            vector_file, vocabulary, extra, settings.vocab_from_vectors,
            cache_dir=self.cache_dir, progress=sys.stderr.isatty())
        self.log(vocabulary_summary(training_words, added, settings.extend_vocabulary,
                                    settings.vocab_from_vectors))
        return vocabulary

    def word_vectors(self, preprocessor, vector_file):
        """(matrix [V, D], `EmbeddingReport`) read from `vector_file`; `DataError` when its
        width is not the model's embedding_dim."""
        matrix, report = data.load_vectors(
            vector_file, preprocessor.vocabulary, cache_dir=self.cache_dir,
            oov_init=self.config.data.oov_init, seed=self.config.data.seed,
            oov_scale=self.config.data.oov_scale,
            progress=sys.stderr.isatty())
        if not report.types_found:
            # A file of another kind (a JSON-lines file, say) reads as vectors of no word.
            raise data.DataError(
                f"embeddings={self.config.data.embeddings} has a vector for none of the "
                f"{report.vocab_types:,} words: is it a word-vector text file (a word and "
                "its numbers on each line, as GloVe's)?", fields=("embeddings",))
        self.log(f"embeddings: {report.summary()}")
        if report.dim != self.config.model_config.embedding_dim:
            raise data.DataError(
                f"embeddings={self.config.data.embeddings} has {report.dim}-d vectors but "
                f"embedding_dim={self.config.model_config.embedding_dim}.",
                fields=("embeddings", "embedding_dim"))
        return matrix, report

    @functools.cached_property
    def plan(self):
        """How the run's batches are ordered and shaped
        (`dsan_tf.data.planning.BatchPlan`), decided once from the configuration and the
        policy: its strategy (`planning.strategy`), the epoch's batches, K steps of one
        shape in a row where they run as one program (`dsan_tf.speed.multi_step`), and
        whether a shape costs what its longer side costs (one pass of a sentence
        encoder)."""
        from dsan_tf.speed import multi_step

        settings, training, policy = self.config.data, self.config.training, self.policy
        sentence_encoder = not family(self.config.model).pair_input
        steps = policy.steps_per_execution
        return planning.BatchPlan(
            strategy=planning.strategy(policy.bounded_shapes,
                                       policy.sentence_programs and sentence_encoder,
                                       policy.shape_costs),
            batch_size=settings.batch_size, order=settings.batching,
            shuffle=settings.shuffle, seed=settings.seed, max_length=settings.max_length,
            epoch_steps=(training.epoch_steps(settings.batch_size)
                         if training.schedule_epoch_pairs else training.steps_per_epoch or None),
            repeat=bool(training.schedule_epoch_pairs), epochs=training.epochs,
            deterministic=settings.deterministic,
            run_length=steps if multi_step.applies(steps, policy.jit_compile) else 1,
            one_pass=bool(policy.one_pass and sentence_encoder),
            shape_costs=policy.shape_costs,
            embedding_dim=getattr(self.config.model_config, "embedding_dim", None),
            log=self.log)

    def build_inputs(self, pairs, training=False, in_order=False, shapes=None):
        """The batches of `pairs` (`EncodedPairs`, or `IdPairs` without TensorFlow) as the
        plan shapes them (`BatchPlan.batches`): for training shuffled (seeded) and cut to
        `steps_per_epoch`, or repeated into epochs of `schedule_epoch_pairs`; `in_order`
        (evaluation only) keeps the pairs' order; `shapes`, the training shapes that
        evaluation batches take."""
        return self.plan.batches(pairs, training, in_order, shapes)

    def build_model(self, vocabulary_size, word_vectors=None, vocabulary=None):
        """An uncompiled `NLIClassifier` of the configured model family.

        A family that makes token features from the `vocabulary` beside the word vectors
        (`Family.token_features`: the Gaussian Transformer's character 5-grams) gets
        them; without a vocabulary (the synthetic benchmarks) they start random. An unset
        `trainable_embeddings` trains the word embedding when no `word_vectors` are given,
        as `ExperimentConfig.resolved` records it (token features made here do not count)."""
        config = dataclasses.replace(self.config.model_config, vocab_size=vocabulary_size)
        if config.trainable_embeddings is None:
            config = dataclasses.replace(config, trainable_embeddings=word_vectors is None)
        chosen = family(self.config.model)
        if chosen.token_features and vocabulary is not None:
            word_vectors = chosen.token_features(config, vocabulary, word_vectors,
                                                 self.config.data.seed)
        return build_model(self.config.model, config, word_vectors,
                           one_pass=self.policy.one_pass)

    def compile(self, model, jit_compile=None, train_size=None):
        """`model` compiled by its `compile` (`TextModel.compile`) with the configured
        optimizer (`optimizer`), the paper's loss and metric and the policy's
        `jit_compile` (`jit_compile` overrides it), `steps_per_execution` and
        `sentence_programs`; its optimizer's variables made. `train_size` (training pairs)
        sets the epoch length that learning-rate cycles and normalized weight decay
        need."""
        policy = self.policy
        model.compile(optimizer=self.optimizer(model, train_size),
                      jit_compile=policy.jit_compile if jit_compile is None else jit_compile,
                      steps_per_execution=policy.steps_per_execution,
                      sentence_programs=policy.sentence_programs)
        if not model.optimizer.built:  # a model not built yet builds its variables first
            model.optimizer.build(model.trainable_variables)
        return model

    def optimizer(self, model, train_size=None):
        """The configured optimizer (`dsan_tf.core.optimization.make_optimizer`)."""
        return make_optimizer(self.config.training, self.config.data.batch_size, model,
                              train_size)
