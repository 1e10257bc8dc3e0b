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
from dsan_tf.data import batching
from dsan_tf.core.config import ExperimentConfig
from dsan_tf.core.optimization import compile_for_training, make_optimizer
from dsan_tf.models import build_model, family


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


class NLITask:
    """Builds every part of an NLI experiment from its configuration.

    Args:
        config: `dsan_tf.core.config.ExperimentConfig`.
        log: called with one line of text per report (reading, vocabulary, vectors).
    """

    def __init__(self, config=None, log=print):
        self.config = config or ExperimentConfig()
        self.log = log

    @functools.cached_property
    def resolved(self):
        """The configuration as it runs here, resolved once for the current Keras backend
        and device (`ExperimentConfig.resolved`): every "unset" how-it-runs field decided."""
        return self.config.resolved()

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

    def training_subset(self, examples):
        """The configured `train_subset` of `examples`: a random subset drawn with a fixed
        seed (0, not the run's), so that every model and seed trains on the same pairs, in
        their original order. All of them when the subset is 0 or not smaller."""
        size = self.config.data.train_subset
        if not size or size >= len(examples):
            return examples
        chosen = np.sort(np.random.default_rng(0).choice(len(examples), size, replace=False))
        self.log(f"train_data: a random subset of {size:,} of the {len(examples):,} pairs")
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

    def bounded_shapes(self):
        """Whether batches come in a fixed set of shapes (`DataConfig.bounded_shapes`;
        unset: when the training step is compiled)."""
        return bool(self.resolved.data.bounded_shapes)

    def build_inputs(self, pairs, training=False, static_shapes=False, in_order=False,
                     shapes=None):
        """The batches of `pairs` (`EncodedPairs`, or `IdPairs` without TensorFlow): for
        training shuffled (seeded) and cut to `steps_per_epoch`, or repeated into epochs of
        `schedule_epoch_pairs`; `in_order` (evaluation only) keeps the pairs' order.

        With `bounded_shapes` they are `dsan_tf.data.batching.NLIBatches` (NumPy, a few
        shapes, `shapes` or a grid fitted to `pairs`, triples with sample weights);
        otherwise `tf.data` batches padded to each batch's longest sentence, where
        `static_shapes` pads to bucket boundaries and drops partial batches (TPUs compile
        one program per shape)."""
        if self.bounded_shapes() and not static_shapes:
            return self.numpy_batches(pairs, training, in_order, shapes)
        settings = self.config.data
        common = dict(batch_size=settings.batch_size, deterministic=settings.deterministic,
                      pad_to_bucket=settings.pad_to_bucket or static_shapes)
        if in_order:
            return data.make_dataset(pairs, batch_size=settings.batch_size, buckets=None)
        if not training:
            return data.make_dataset(pairs, **common)
        # Static shapes need bucket boundaries to pad to, whatever the batching setting.
        bucketed = settings.batching.endswith("_buckets") or static_shapes
        buckets = data.DEFAULT_BUCKETS if bucketed else None
        dataset = data.make_dataset(
            pairs, shuffle=settings.shuffle, seed=settings.seed, drop_remainder=static_shapes,
            buckets=buckets, bucket_hypothesis=settings.batching != "premise_buckets"
            or static_shapes, sort_chunks=(data.SORT_CHUNK_BATCHES
                                           if settings.batching == "sorted_chunks" else 0),
            **common)
        training = self.config.training
        if training.schedule_epoch_pairs:
            # An epoch of N pairs: batches of the data reshuffled pass after pass (each
            # epoch, and each pass within one, draws a new order).
            return dataset.repeat().take(training.epoch_steps(settings.batch_size))
        steps = training.steps_per_epoch
        return dataset.take(steps) if steps else dataset

    def skip_epochs(self, batches, epochs):
        """Advances the training `batches` (`build_inputs(..., training=True)`) by
        `epochs` epochs, so that the next epoch draws the order that epoch `epochs` + 1 of
        a run from the start draws: a resumed or extended run continues its order.
        Returns what the caller keeps until `fit` has begun (None,
        or a `tf.data` iterator).

        `NLIBatches` draw an epoch from the seed and the pass alone. A `tf.data` shuffle
        draws its next seeds as its iterators fill their buffers, and which seeds depends
        on the iterators alive then: Keras' `fit` trains an epoch on one iterator, makes
        the next at the epoch's end while that one lives, and, with no
        `steps_per_epoch`, makes the next epoch's while that one lives. Each epoch skipped
        does the same, reading an element (an epoch of `schedule_epoch_pairs`, which may
        start passes anywhere, is read through: the data pipeline, no model); the last
        iterator must live until `fit` makes its own. `tests/test_training_library.py`
        compares resumed histories with runs from the start."""
        if isinstance(batches, batching.NLIBatches):
            batches.skip_epochs(epochs)
            return None
        whole, held = bool(self.config.training.schedule_epoch_pairs), None
        for _ in range(epochs):
            trained = iter(batches)
            held = None
            for _ in trained if whole else [next(trained, None)]:
                pass
            held = iter(batches)
            del trained
        return held

    def numpy_batches(self, pairs, training=False, in_order=False, shapes=None):
        """`NLIBatches` of `pairs` as `build_inputs` describes them, without TensorFlow for
        `IdPairs`: in `shapes` (grown to hold `pairs`: evaluation in the training shapes),
        else with `bounded_shapes` in shapes chosen for `pairs` (`training_shapes`), else
        each batch padded to its longest sentence."""
        settings = self.config.data
        if not isinstance(pairs, batching.IdPairs):
            pairs = batching.IdPairs.from_encoded(pairs)
        if shapes is None and not self.bounded_shapes():
            shapes = batching.Shapes()
        if in_order or not training:
            order = "in_order" if in_order else "length_buckets"
            fit = batching.Shapes.fit_shared if self.shared_lengths() else batching.Shapes.fit
            shapes = shapes.extended_to(pairs) if shapes else fit(
                pairs, settings.batch_size, order, max_length=settings.max_length)
            return batching.NLIBatches(pairs, settings.batch_size, order, shapes, shuffle=False)
        order = settings.batching
        steps = None
        if self.config.training.schedule_epoch_pairs or self.config.training.steps_per_epoch:
            steps = self.config.training.epoch_steps(settings.batch_size, len(pairs))
        shapes = shapes or self.training_shapes(pairs, steps)
        return batching.NLIBatches(pairs, settings.batch_size, order, shapes,
                                   shuffle=settings.shuffle, seed=settings.seed, steps=steps,
                                   run_length=self.run_length())

    def run_length(self):
        """K, the training batches of one shape in a row, where K steps run as one
        compiled program (`dsan_tf.speed.multi_step.applies`: JAX, a compiled step,
        `steps_per_execution` K, no Keras distribution); else 1."""
        from dsan_tf.speed import multi_step

        training = self.resolved.training
        steps = training.steps_per_execution
        return steps if multi_step.applies(steps, training.jit_compile) else 1

    def shared_lengths(self):
        """Whether both sides' batches are padded to one grid of lengths: where the model
        compiles programs per sentence length (`TrainingConfig.sentence_programs`, resolved;
        a sentence-encoder family), a length shared by the sides is compiled once."""
        return bool(self.resolved.training.sentence_programs
                    and not family(self.config.model).pair_input)

    def one_pass(self):
        """Whether the model's encoder reads premise and hypothesis as one batch padded to
        the longer side (`TrainingConfig.one_pass`, resolved; a sentence-encoder family):
        a batch shape then costs what its longer side costs."""
        return bool(self.resolved.training.one_pass
                    and not family(self.config.model).pair_input)

    def training_shapes(self, pairs, steps=None):
        """The bounded shapes of training on `pairs` (`IdPairs`) in epochs of `steps`
        batches (None: a pass): by `DataConfig.shape_costs`, those that cost least in
        compiles plus steps over the configured epochs on this device
        (`batching.Shapes.choose`), or the padding grid (`Shapes.fit`); where
        `shared_lengths`, one grid for both sides (`Shapes.fit_shared`), whatever
        `shape_costs` says: its costs are of whole steps compiled per shape."""
        from dsan_tf.data import costs  # NumPy only

        settings = self.config.data
        if self.shared_lengths():  # `shape_costs` prices whole steps, compiled per shape
            shapes = batching.Shapes.fit_shared(pairs, settings.batch_size, settings.batching,
                                                settings.seed, settings.max_length)
            chosen = shapes.chosen
            self.log(f"batch shapes of {chosen['lengths']} sentence lengths for both sides "
                     f"(per-length programs): {shapes.describe()}, {chosen['padding']:.1%} "
                     f"padding; a grid per side: {chosen['grids']['lengths']} lengths, "
                     f"{chosen['grids']['padding']:.1%} padding"
                     + ("" if settings.shape_costs == "device" else
                        f"; --shape_costs={settings.shape_costs} not used: it prices whole "
                        "steps compiled per shape (--nosentence_programs uses it)"))
            return shapes
        step_costs = costs.step_costs(settings.shape_costs)
        if step_costs is None:
            return batching.Shapes.fit(pairs, settings.batch_size, settings.batching,
                                       settings.seed, max_length=settings.max_length)
        per_pass = -(-len(pairs) // settings.batch_size)
        passes = self.config.training.epochs * (steps or per_pass) / max(per_pass, 1)
        shapes = batching.Shapes.choose(
            pairs, settings.batch_size, settings.batching, step_costs, passes, settings.seed,
            settings.max_length, getattr(self.config.model_config, "embedding_dim", None),
            one_pass=self.one_pass())
        chosen = shapes.chosen
        self.log(f"batch shapes by {chosen['by'].replace('_', ' ')} ({step_costs.source}): "
                 f"{shapes.describe()}; predicted "
                 + ", ".join(f"{name.replace('_', ' ')} {v['shapes']} shape(s), "
                             f"{v['padding']:.1%} padding, {v['seconds']:.0f} s"
                             for name, v in (("padding_grid", chosen["padding_grid"]),
                                             ("cells", chosen["cells"])))
                 + f" over {self.config.training.epochs} epoch(s)")
        return shapes

    def build_model(self, vocabulary_size, word_vectors=None, vocabulary=None):
        """An uncompiled `NLIClassifier` of the configured model family.

        A family that makes token features from the `vocabulary` beside the word vectors
        (`Family.token_features`: the Gaussian Transformer's character 5-grams) gets
        them; without a vocabulary (the synthetic benchmarks) they start random."""
        config = dataclasses.replace(self.config.model_config, vocab_size=vocabulary_size)
        chosen = family(self.config.model)
        if chosen.token_features and vocabulary is not None:
            word_vectors = chosen.token_features(config, vocabulary, word_vectors,
                                                 self.config.data.seed)
        return build_model(self.config.model, config, word_vectors,
                           one_pass=self.resolved.training.one_pass)

    def compile(self, model, jit_compile=None, train_size=None):
        """Compiles with the paper's loss and metric and the configured optimizer
        (`compile_for_training`, `optimizer`); `jit_compile` overrides the
        configuration's. `train_size` (training pairs) sets the epoch length that
        learning-rate cycles and normalized weight decay need. Keras'
        `steps_per_execution` and `sentence_programs` are the configuration's, resolved for
        the device."""
        training = self.config.training
        jit_compile = training.jit_compile if jit_compile is None else jit_compile
        resolved = self.resolved.training
        return compile_for_training(model, jit_compile, self.optimizer(model, train_size),
                                    resolved.steps_per_execution, resolved.sentence_programs)

    def optimizer(self, model, train_size=None):
        """The configured optimizer (`dsan_tf.core.optimization.make_optimizer`)."""
        return make_optimizer(self.config.training, self.config.data.batch_size, model,
                              train_size)
