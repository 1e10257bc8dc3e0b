"""A training run, as functions of explicit arguments: `train_run` claims the run directory
and calls `train`, which calls the steps in order (devices, data, model, callbacks, fit,
results); the `NLITask` it is given builds the parts. `dsan_tf.programs.train` parses its
flags into the `ExperimentConfig` (what is trained) and `RunPolicy` (how its steps run) of
that task, and the `RunOutputs` (what it writes; all three `dsan_tf.core.config`).
"""

import dataclasses
import math
import os

from dsan_tf.common.frameworks import keras
import numpy as np

from dsan_tf import data
from dsan_tf.common import console, progress, quiet
from dsan_tf.common.errors import UsageError, require_tensorflow_backend
from dsan_tf.common.labels import LABELS, NON_ENTAILMENT_ID
from dsan_tf.data import batching
from dsan_tf.core import rundir as run_files
from dsan_tf.core.config import RunOutputs
from dsan_tf.core.task import NLITask
from dsan_tf.models import registry
from dsan_tf.saving import model_card
from dsan_tf.speed import compilation
from dsan_tf.training import callbacks
from dsan_tf.training import run_state as run_state_lib


@dataclasses.dataclass(frozen=True)
class TrainOutcome:
    """What `train_run` did: `state` ("new", "resume", "extend"; "finished": nothing
    trained; "stopped": trained as many epochs as `train_run`'s `stop_after_epochs` asked,
    not all), the run directory and its results.json (stopped: the epochs done and
    `run_facts`, no file)."""

    state: str
    workdir: str
    results: dict

    def summary(self):
        """The line a run ends with (scripts read it): dev (and test) accuracy, best epoch,
        the epochs trained and their time, the model's file."""
        results = self.results
        if self.state == "stopped":
            return (f"stopped as asked after epoch {results['epochs']}: {self.workdir} keeps "
                    "its epochs; the same command trains on.")
        test = (f", test accuracy {results['test_accuracy']:.4f}"
                if "test_accuracy" in results else "")
        return (f"dev accuracy {results['dev_accuracy']:.4f} (best epoch "
                f"{results['best_epoch']}){test}; {self.trained()}; model: "
                f"{os.path.join(self.workdir, run_files.BEST)}")

    def trained(self):
        """"4 epochs, 0:01:32 of training": the run's epochs and their time (history.csv's
        seconds, summed over every start)."""
        history = run_files.read_history(os.path.join(self.workdir, run_files.HISTORY))
        seconds = sum(row.get("seconds", 0.0) for row in history)
        return (f"{len(history)} epoch{'' if len(history) == 1 else 's'}, "
                f"{progress.clock(seconds)} of training")


def train_run(workdir, task, *, overwrite=False, setting=None, outputs=RunOutputs(),
              stop_after_epochs=0, callbacks=()):
    """Trains `task` (its configuration, as its policy says) in the run directory
    `workdir`, resuming what an interrupted run of the same configuration left there (its
    config.json is compared field by field); a finished run is not trained again, unless
    the configuration gives it more epochs, when it trains on from its last one.
    `outputs.export_dir` exports a finished run too. As TF Model Garden's
    `train_lib.run_experiment`, it runs a task that the caller made: the task builds the
    model, the driver only hands it the data.

    The data are the configuration's `data` files, read and tokenized here (TensorFlow),
    or an encoded `setting` of them: its ids and word vectors as they are, with Keras and
    NumPy alone where TensorFlow is not installed (the run directory is the same, without
    TensorBoard's files, which TensorFlow writes).

    Args:
        workdir: the run directory.
        task: `dsan_tf.core.task.NLITask` of the `ExperimentConfig` to train, recorded in
            config.json with its unset choices decided (`ExperimentConfig.resolved`: its
            word vectors trained or not, as the model is built), and its `RunPolicy`:
            resolved once for the backend and device, printed in one line and recorded in
            config.json ("policy").
        overwrite: replace what an earlier run left in `workdir` (its files only).
        setting: `dsan_tf.training.setting.EncodedSetting` of the configuration's data,
            or None.
        outputs: `dsan_tf.core.config.RunOutputs`, what the run logs, probes and exports;
            recorded in config.json ("outputs").
        stop_after_epochs: train at most this many epochs in this call, then stop as an
            interrupted run stops (its epochs kept; the same call resumes it); 0: to the end.
        callbacks: Keras callbacks called after the run's, once each epoch is committed.

    Returns:
        `TrainOutcome`.

    Raises:
        UsageError: naming the configuration fields at fault (another configuration in
            `workdir`, a probe sentence for a model that shows none, ...).
    """
    if not isinstance(task, NLITask):  # an ExperimentConfig, as train_run took before
        raise TypeError(f"train_run takes the NLITask to train (NLITask(config, policy) of "
                        f"dsan_tf.core.task), got a {type(task).__name__}.")
    _check(task.config, outputs, setting)
    created = not os.path.isdir(workdir)
    run = run_files.RunDirectory(workdir)
    run.lock()  # released when this process ends, however it ends
    try:
        return _train_locked(run, (task, outputs, stop_after_epochs, tuple(callbacks)),
                             overwrite, created, setting)
    finally:
        run.unlock()


def _check(config, outputs, setting):
    """What `train_run` refuses before it claims the run directory: one `UsageError`."""
    if outputs.export_dir:
        require_tensorflow_backend("export_dir")  # before training, not after it
    if outputs.probe_sentence and not registry.family(config.model).sentence_figures:
        showing = [name for name in registry.names() if registry.family(name).sentence_figures]
        raise UsageError(f"probe_sentence needs a model that shows a sentence's attention "
                         f"({', '.join(showing)}), not {config.model}.",
                         fields=("probe_sentence",))
    if outputs.probe_sentence and not quiet.tensorflow_importable():
        raise UsageError("probe_sentence draws into TensorBoard, whose files TensorFlow "
                         "writes: it is not installed.", fields=("probe_sentence",))
    if setting is None:
        return
    from dsan_tf.training.setting import BATCHING

    for field in dataclasses.fields(config.data):
        there, now = (getattr(part, field.name) for part in (setting.config.data, config.data))
        if there != now and field.name not in BATCHING:  # its ids are of these
            raise UsageError(f"setting holds ids encoded with {field.name}={there}, not "
                             f"{now}: a run of it keeps its data settings.",
                             fields=("setting", field.name))


def _train_locked(run, asked, overwrite, created, setting):
    """`train_run` in the claimed run directory, holding its lock; `asked`: (task,
    outputs, stop_after_epochs, callbacks)."""
    task = asked[0]
    try:
        state = run.claim(task.config.resolved(), task.policy, overwrite=overwrite)
    except BaseException:
        if created:
            run.discard(remove_directory=True)
        raise
    with console.kept_in(run.path(run_files.LOG)):
        outcome = _train_claimed(run, state, asked, created, setting)
        print(outcome.summary())
    return outcome


def _train_claimed(run, state, asked, created, setting):
    """`_train_locked` once the run directory is claimed for `state`."""
    task, outputs, stop_after_epochs, extra = asked
    done = run.epochs_done()
    if state == "finished":
        print(f"{run.workdir} is a finished run of this configuration: nothing trained "
              "(add --overwrite to train it again, or a higher --epochs to train on).")
        heal_finished(run)
        if outputs.export_dir:
            _export_finished(run, outputs.export_dir)
        return TrainOutcome(state, run.workdir, run.read_json(run_files.RESULTS))
    _continue(run, state, done, task.config.training.epochs)
    try:
        results = train(task, run, setting, train_epochs=state != "evaluate",
                        outputs=outputs, stop_after_epochs=stop_after_epochs, callbacks=extra)
    except BaseException as error:
        # No epoch committed: nothing to keep, so nothing is left (an interrupted first
        # epoch would leave config.json, which then refused a new configuration).
        if state == "new" and not run.epochs_done():
            run.discard(remove_directory=created)
        elif run.exists(run_files.CONFIG):  # what the record holds, no more
            try:
                run_state_lib.settle(run, run.checkpoint())
            except OSError:  # a full disk: the next run settles them
                pass
        full = _disk_full(error, run.workdir)
        if full is not None:
            raise full from None
        raise
    if not run.exists(run_files.RESULTS):  # stopped as asked, before its last epoch
        state = "stopped"
    return TrainOutcome(state, run.workdir, results)


def _disk_full(error, workdir):
    """An `OSError` (no space left, naming `workdir`) for what a writer other than
    Python's reports of a full disk (TensorFlow's `ResourceExhaustedError`, h5py's
    errors), or None for any other error."""
    if isinstance(error, OSError):
        return None
    text = str(error)
    if "No space left" in text or "Disk quota exceeded" in text or \
            type(error).__name__ == "ResourceExhaustedError":
        return OSError(28, "No space left on device", workdir)
    return None


def heal_finished(run, say=print):
    """Checks a finished run's views against its record and writes again what is damaged
    or missing (history.csv, best.keras, best.json, the event files: `run_state.settle`;
    MODEL_CARD.md from config.json and results.json), saying so in one line each."""
    run_state_lib.settle(run, run.checkpoint(say), say)
    _heal_preprocessor(run, say)
    card = run.path(run_files.CARD)
    expected = model_card.text(run)
    try:
        with open(card, encoding="utf-8") as stream:
            current = stream.read()
    except (OSError, UnicodeDecodeError):
        current = None
    if not _same_card(current, expected):
        model_card.write(run)
        say(f"{card} was {'missing' if current is None else 'not the run card'}; written "
            "again from config.json and results.json.")


def _heal_preprocessor(run, say):
    """vocab.json and preprocessor.json written again from best.keras's own preprocessor
    where either is damaged or missing (a model that holds none: left as it is)."""
    from dsan_tf.models import preset

    try:
        data.NLIPreprocessor.load(run.workdir)
        return
    except (ValueError, OSError) as error:  # DataError: a cut or wrong-typed file
        fault = str(error)
    model = preset.load(run.path(run_files.BEST), compile=False)
    if model.preprocessor is not None:
        model.preprocessor.save(run.workdir)
        say(f"{fault.rstrip('.')}; vocab.json and preprocessor.json written again from "
            f"{run.path(run_files.BEST)}.")


def _same_card(current, expected):
    """Whether the card `current` says what `expected` says, but for the run's folder in
    its commands (a run moved or copied elsewhere keeps its card)."""
    if current is None:
        return False
    lines = [current.splitlines(), expected.splitlines()]
    return len(lines[0]) == len(lines[1]) and all(
        a == b or ("--workdir=" in a and "--workdir=" in b) for a, b in zip(*lines))


def _export_finished(run, export_dir):
    """Exports a finished run found again, unless the export already holds its model: a
    re-run that trains nothing writes no new version (export/3,
    export/4... of one model)."""
    from dsan_tf.saving.export import export_runs, exported_version  # TensorFlow's

    exported = exported_version(run, export_dir)
    if exported:
        print(f"already exported: {exported} holds this run's model")
    else:
        print(f"SavedModel, model.keras, the preprocessor and {model_card.CARD}: "
              f"{export_runs([run], export_dir)}")


def _continue(run, state, done, epochs):
    """Says how a resumed or extended run goes on; an extended run's results and card go
    (they described the shorter run)."""
    if state in ("extend", "resume") and run.exists(run_files.RESULTS):
        # They described the longer or damaged run: written again at its end.
        for name in (run_files.RESULTS, run_files.CARD):
            if run.exists(name):
                os.remove(run.path(name))
    if state == "extend":
        print(f"extending {run.workdir}: {done} epoch(s) done, training epochs {done + 1} "
              f"to {epochs}")
    elif state == "evaluate":
        print(f"finishing {run.workdir} again: {run.results_fault()}; its best model is "
              "evaluated again to write it")
    elif state == "resume" and done >= epochs:  # e.g. an extension stopped before its epoch
        print(f"finishing {run.workdir}: {done} epoch(s) done, as many as asked; nothing to "
              f"train: its best model is evaluated to write {run.path(run_files.RESULTS)}")
    elif state == "resume":
        print(f"resuming {run.workdir}: {done} epoch(s) done, training from epoch {done + 1}")


def interrupted_message(workdir, command):
    """What Ctrl-C during `train_run` leaves, for the user: the command that resumes."""
    run = run_files.RunDirectory(workdir)
    done = run.epochs_done()
    if not done:
        return f"no epoch had finished, so nothing was kept; `{command}` starts it again."
    config = run_files.recorded_config(run.read_json(run_files.CONFIG))
    if config is not None and done >= config.training.epochs:  # stopped in its evaluation
        return (f"all {done} epoch(s) of {workdir} are kept; `{command}` evaluates its best "
                "model and finishes it.")
    return (f"{done} epoch(s) of {workdir} are kept; `{command}` resumes from epoch "
            f"{done + 1}.")


def train(task, run, setting=None, train_epochs=True, outputs=RunOutputs(),
          stop_after_epochs=0, callbacks=()):
    """Trains `task` (`NLITask`) in the claimed `RunDirectory` `run` as its policy says,
    on its configuration's data files or the encoded `setting` of them (`train_epochs`
    False: no epoch, the finished run's best model evaluated again), writing what
    `outputs` asks, at most `stop_after_epochs` epochs (0: to the end), calling
    `callbacks` after its own; returns the results dict that results.json holds."""
    config, policy = task.config, task.policy
    print(policy.describe())
    set_up(config)
    # Off as asked: JAX's own switch, which the model's compile then honours.
    cache = compilation.enable_jax_cache(config.data.embeddings_cache_dir,
                                         policy.compilation_cache)
    if cache:
        print(f"JAX compilation cache: {cache}")
    prepared = prepare_data(task, run, setting)
    inputs = make_inputs(task, prepared)
    padding = describe_batches(inputs, prepared.vocabulary_size, task.plan.strategy)
    done = run.epochs_done()
    # Resumed or extended: the batch order a run from the start has there (`skipped` lives
    # until `fit` has made its iterator).
    skipped = task.plan.skip_epochs(inputs["train"], done) if done else None
    model = build(task, prepared)
    write_config(run, task, prepared, model, padding, outputs)
    ahead = announce_compiled(task, prepared, model, inputs) if policy.compile_ahead else None
    shared, nan_guard, run_state = make_callbacks(
        run, task, prepared, inputs, outputs.log_every_steps, outputs.probe_sentence)
    epochs = config.training.epochs
    last = min(epochs, done + stop_after_epochs) if stop_after_epochs else epochs
    fit(model, inputs, [*shared, *callbacks], run_state, last if train_epochs else done)
    del skipped
    if train_epochs and last < epochs and not model.stop_training and not nan_guard.stopped:
        # Stopped as asked (stop_after_epochs), not by early stopping: no results yet.
        return {"epochs": len(run_state.rows), **run_facts(inputs, ahead)}
    return finish(run, model, inputs, nan_guard, run_state, outputs.export_dir, ahead)


def announce_compiled(task, prepared, model, inputs):
    """The run's batches handed to `compilation.compile_ahead`, which traces (TensorFlow)
    or compiles (XLA) the training and evaluation steps for every batch shape before the
    first epoch; prints and returns what it did ({"train_shapes", "dev_shapes", "seconds",
    "per_shape"})."""
    # Fresh tf.data batches: iterating a pipeline advances its shuffling (NumPy batches
    # draw their order from the seed and the pass alone).
    batches = inputs if isinstance(inputs["train"], batching.NLIBatches) else \
        make_inputs(task, prepared)
    ahead = compilation.compile_ahead(model, batches["train"], batches["dev"])
    what = "compiled" if task.policy.jit_compile or \
        keras.backend.backend() == "jax" else "traced"
    print(f"{what} the training step for {ahead['train_shapes']} batch shape(s) and the "
          f"evaluation step for {ahead['dev_shapes']} ahead, in {ahead['seconds']:.1f} s")
    return ahead


def make_inputs(task, prepared):
    """{split: batches} of the encoded splits (`NLITask.build_inputs`): with bounded shapes
    the evaluation splits in the training shapes (grown where a sentence is longer), so
    that every split runs in the shapes compiled for training."""
    inputs, shapes = {}, None
    for split in ("train", "dev", "test"):
        if split in prepared.encoded:
            inputs[split] = task.build_inputs(prepared.encoded[split], training=split == "train",
                                              shapes=shapes)
            if split == "train":
                shapes = getattr(inputs[split], "shapes", None)
    return inputs


def describe_batches(inputs, vocabulary_size, strategy):
    """Prints the vocabulary size, the planner's `strategy` and the training batches'
    padding (and, for NumPy batches of bounded shapes, the shapes each split uses);
    returns the padding fraction."""
    train = inputs["train"]
    if not isinstance(train, batching.NLIBatches):
        padding = data.padding_fraction(train)
        print(f"vocabulary: {vocabulary_size:,} ids; training batches ({strategy}) hold "
              f"{padding:.1%} padding")
        return padding
    description = train.describe()  # a pass of batches: once
    print(f"vocabulary: {vocabulary_size:,} ids; training batches ({strategy}): "
          f"{train.summary(description)}")
    for split in ("dev", "test"):
        if split in inputs:
            print(f"{split} batches: {inputs[split].summary()}")
    return description[0]


@dataclasses.dataclass
class PreparedData:
    """What `prepare_data` made: the vocabulary (`data.Vocabulary`), the preprocessor
    (`data.NLIPreprocessor`; None for an encoded setting where TensorFlow is not), the
    encoded pairs per split (`EncodedPairs`, or a setting's `IdPairs` without TensorFlow),
    the word vectors, and what reading found, as numbers (config.json's "embeddings",
    "read": each split's pairs kept and dropped, "tokens": unknown words, truncation)."""

    vocabulary: object
    preprocessor: object
    encoded: dict
    word_vectors: np.ndarray | None
    found: dict

    @property
    def vocabulary_size(self):
        return self.vocabulary.size


def set_up(config):
    """Precision, seeds and determinism."""
    # Keras' dtype policy is global: set either way (a caller's run before may have
    # changed it).
    precision = config.training.mixed_precision
    keras.config.set_dtype_policy("float32" if precision == "none" else precision)
    keras.utils.set_random_seed(config.data.seed)
    if config.data.deterministic and keras.backend.backend() == "tensorflow":
        from dsan_tf.common.frameworks import tf  # the backend: loaded already

        tf.config.experimental.enable_op_determinism()


def prepare_data(task, run, setting=None):
    """Reads the splits, builds (or, resuming, reloads) the preprocessor, reads the word
    vectors and encodes every split; or takes all that from an encoded `setting`.
    Returns `PreparedData`."""
    if setting is not None:
        return _from_setting(task, run, setting)
    settings = task.config.data
    splits, reports = {}, {}
    for name in ("train", "dev", "test"):
        spec = getattr(settings, f"{name}_data")
        if spec:
            splits[name], reports[name] = task.read(spec, f"{name}_data")
    for name in ("train", "dev"):
        if any(e.label == NON_ENTAILMENT_ID for e in splits.get(name, [])):
            raise UsageError(f"--{name}_data={getattr(settings, f'{name}_data')} has two-way "
                             "labels (non-entailment, as HANS): evaluate on it with "
                             "dsan-evaluate; the models learn three classes.")
    for name in ("train", "dev"):
        splits[name] = task.subset(splits[name], name)
    vector_file = task.vector_file()
    vocabulary = None
    if run.exists(run_files.VOCAB):  # a resumed run keeps its ids
        try:
            vocabulary = data.Vocabulary.load(run.path(run_files.VOCAB))
        except data.DataError as error:  # damaged: made again as the run made it first
            print(f"{str(error).rstrip('.')}; built again from the training data, as the "
                  "run built it.")
    if vocabulary is not None:
        if vocabulary.lowercase != settings.lowercase:
            raise UsageError(f"{run.path(run_files.VOCAB)} was built with lowercase="
                             f"{vocabulary.lowercase}; use another workdir to change "
                             "lowercase.", fields=("workdir", "lowercase"))
    preprocessor = task.build_preprocessor(
        splits["train"], splits["dev"] + splits.get("test", []), vector_file, vocabulary)
    _save_preprocessor(preprocessor, run)
    matrix, embeddings = None, {"source": "random"}
    if vector_file:
        matrix, report = task.word_vectors(preprocessor, vector_file)
        embeddings = {"source": vector_file, "cache": report.cache_path,
                      "types_found": report.types_found, "vocab_types": report.vocab_types,
                      "tokens_found": report.tokens_found, "tokens_total": report.tokens_total}
    encoded = {name: preprocessor.encode(examples) for name, examples in splits.items()}
    for name, pairs in encoded.items():
        print(f"{name} tokens: {pairs.report.summary()}")
    tokens = {name: pairs.report.counts() for name, pairs in encoded.items()}
    return PreparedData(preprocessor.vocabulary, preprocessor, encoded, matrix, {
        "embeddings": embeddings, "tokens": tokens,
        "read": {name: report.to_dict() for name, report in reports.items()}})


def _save_preprocessor(preprocessor, run):
    """Writes the run's vocab.json and preprocessor.json, saying so where a resumed run's
    differed (damaged or edited: the run's own are made again as it made them)."""
    names = (run_files.VOCAB, run_files.PREPROCESSOR)
    before = {name: _bytes_or_none(run.path(name)) for name in names}
    preprocessor.save(run.workdir)
    for name in names:
        if before[name] is not None and before[name] != _bytes_or_none(run.path(name)):
            print(f"{run.path(name)} did not match the run's preprocessor (damaged or "
                  "edited); written again.")


def _bytes_or_none(path):
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError:
        return None


def _from_setting(task, run, setting):
    """`PreparedData` of an encoded setting: its ids, word vectors and what reading found,
    as they are; where TensorFlow is, the preprocessor of its words (best.keras then reads
    text) and the ids as `EncodedPairs`, so that the batches are those of a run from the
    files."""
    print("encoded setting: " + ", ".join(
        f"{name} {len(setting.splits[name]):,} pairs" for name in ("train", "dev", "test")
        if name in setting.splits) + f", {setting.vocabulary_size:,} ids")
    vocabulary = data.Vocabulary(setting.words, lowercase=task.config.data.lowercase,
                                 min_count=task.config.data.min_count)
    preprocessor = None
    if quiet.tensorflow_importable():
        preprocessor = data.NLIPreprocessor(vocabulary, task.config.data.max_length)
        preprocessor.save(run.workdir)
        encoded = {name: data.EncodedPairs.from_ids(pairs, setting.found["tokens"][name],
                                                    task.config.data.max_length)
                   for name, pairs in setting.splits.items()}
    else:
        print("encoded setting without TensorFlow: best.keras reads token ids, not text "
              "(TensorFlow tokenizes)")
        encoded = dict(setting.splits)
    return PreparedData(vocabulary, preprocessor, encoded, setting.word_vectors,
                        setting.found)


def build(task, prepared):
    """The compiled model; prints its size."""
    model = task.compile(task.build_model(prepared.vocabulary_size, prepared.word_vectors,
                                          prepared.vocabulary),
                         train_size=len(prepared.encoded["train"].labels))
    # The model keeps its text processing: best.keras reads raw text (`NLIClassifier`).
    model.preprocessor = prepared.preprocessor
    parts = model.parameter_breakdown()
    print(f"model: {task.config.model}, {parts['params_excluding_embeddings']:,} trainable "
          "parameters excluding word embeddings")
    return model


def write_config(run, task, prepared, model, padding, outputs):
    """config.json: the configuration (`ExperimentConfig.to_dict`), the policy it runs by
    (`RunPolicy`, resolved), what it writes (`RunOutputs`) and what the run found,
    as numbers: the labels, vocabulary, word vectors, parameters, each split's pairs read
    and dropped (`read`) and tokens (`tokens`: unknown words, truncation).

    Each value is written once: the text settings (`data.max_length`, `data.lowercase`)
    are the configuration's, so neither the top level nor the token counts repeat them
    (older records do; readers read `data`)."""
    run.write_json(run_files.CONFIG, {
        **task.config.resolved().to_dict(), "policy": task.policy.to_dict(),
        "outputs": outputs.to_dict(),
        "label_names": list(LABELS),
        "vocab_size": prepared.vocabulary_size,
        "embeddings": prepared.found["embeddings"],
        "parameters": model.parameter_breakdown(),
        "padding_fraction": padding,
        "provenance": run_files.provenance(),
        "read": prepared.found["read"], "tokens": prepared.found["tokens"]})


def make_callbacks(run, task, prepared, inputs, log_every_steps, probe_sentence=None):
    """(the callbacks of `fit`, the `StopOnNaN` guard, the `RunState`): the last two say
    how the run ended, as objects."""
    config = task.config.resolved()  # as config.json records it
    nan_guard = callbacks.StopOnNaN()
    keep_best = callbacks.KeepBest()
    hparams = dict(dataclasses.asdict(config.model_config), model=config.model,
                   learning_rate=config.training.learning_rate,
                   batch_size=config.data.batch_size, embeddings=prepared.found["embeddings"]["source"],
                   seed=config.data.seed, mixed_precision=config.training.mixed_precision)
    shared = [callbacks.Interruptible(), callbacks.EpochLog(), nan_guard, keep_best]
    flush = []
    if quiet.tensorflow_importable():
        tensorboard = callbacks.TensorBoard(run.path(run_files.TENSORBOARD),
                                            update_freq=log_every_steps)
        flush.append(tensorboard.flush)
        shared += [tensorboard, callbacks.HParams(
            run.path(run_files.TENSORBOARD), hparams,
            trial=os.path.basename(os.path.abspath(run.workdir)))]
    else:
        print("TensorBoard: no event files (TensorFlow writes them; it is not installed)")
    run_state = run_state_lib.RunState(run, keep_best, flush=flush)
    if probe_sentence:
        preprocessor = prepared.preprocessor
        ids = preprocessor.token_ids([probe_sentence]).to_list()[0]
        shared.append(callbacks.ProbeFigures(run.path(f"{run_files.TENSORBOARD}/probe"),
                                             preprocessor.tokens(probe_sentence), ids))
    if config.training.halve_on_dev_drop:
        shared.append(callbacks.HalveOnDevDrop(run_state))
    if config.training.patience:
        shared.append(callbacks.EarlyStopping(config.training.patience,
                                              config.training.restart_epochs, keep_best))
    # The epoch's commit after everything that writes or changes something at its end.
    shared.append(run_state)
    # Last: the epoch's line shows what the others added to the logs (seconds).
    shared.append(callbacks.TrainingProgress(config.training.epochs,
                                            progress.cardinality(inputs["train"]),
                                            progress.cardinality(inputs["dev"])))
    return shared, nan_guard, run_state


def fit(model, inputs, shared, run_state, epochs):
    """`model.fit` from the run's record (`RunState.restore`: the epochs it has done)."""
    done = run_state.restore(model)
    model.fit(inputs["train"], validation_data=inputs["dev"], epochs=epochs, shuffle=False,
              initial_epoch=done,
              verbose=0,  # progress.TrainingProgress shows it, in a terminal or a log file
              callbacks=shared)


def run_facts(inputs, compiled_ahead=None):
    """What this call of the run did besides training: {"compiled_ahead": what
    `compile_ahead` did, when it ran; "batch_shapes": for NumPy batches of bounded shapes,
    which, chosen how (`BatchPlan.shapes`), and the padding they leave}."""
    facts = {"compiled_ahead": compiled_ahead} if compiled_ahead else {}
    train = inputs["train"]
    if isinstance(train, batching.NLIBatches) and train.shapes.bounded:
        padding, shapes = train.describe()
        facts["batch_shapes"] = {
            "shapes": train.shapes.describe(), "training_shapes": len(shapes),
            "padding": round(padding, 4), "chosen": train.shapes.chosen,
            **{f"{split}_shapes": len(inputs[split].describe()[1])
               for split in ("dev", "test") if split in inputs}}
    return facts


def finish(run, model, inputs, nan_guard, run_state, export_dir=None, compiled_ahead=None):
    """Evaluates the best epoch's model on dev (and test) with the trained `model`'s
    compiled steps, writes results.json (with what
    `compile_ahead` did, when it ran), exports it when asked. Returns the results dict."""
    if nan_guard.stopped:
        raise nan_guard.stopped.error()
    if not run.exists(run_files.BEST):
        raise UsageError("no epoch finished with a finite dev accuracy; nothing saved in "
                         f"{run.workdir}.")
    best = registry.load_model(run.path(run_files.BEST))
    results = {"best_epoch": run_state.keep_best.best_epoch,
               "parameters": best.parameter_breakdown(),
               "best_weights_sha256": run_files.weights_digest(best)}
    # The trained model with the best weights: its evaluation step is compiled already.
    model.set_weights(best.get_weights())
    for split in ("dev", "test"):
        if split in inputs:
            shown = callbacks.EvaluationProgress(f"best model on {split}",
                                                progress.cardinality(inputs[split]))
            results[f"{split}_accuracy"] = model.evaluate(
                inputs[split], verbose=0, return_dict=True,
                callbacks=[callbacks.Interruptible(), shown])["accuracy"]
    history = run_state.rows
    seconds = [row["seconds"] for row in history if not math.isnan(row.get("seconds", math.nan))]
    results["seconds_per_epoch"] = sum(seconds) / len(seconds) if seconds else None
    results["epochs"] = len(history)
    results.update(run_facts(inputs, compiled_ahead))
    run.write_json(run_files.RESULTS, results)
    model_card.write(run)
    if export_dir:  # the same complete export as dsan-export
        from dsan_tf.saving.export import export_runs  # a SavedModel: TensorFlow's

        print(f"SavedModel, model.keras, the preprocessor and {model_card.CARD}: "
              f"{export_runs([run], export_dir)}")
    return results
