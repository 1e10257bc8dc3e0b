"""The run directory that train writes and evaluate, export, predict and visualize read,
and the file names of an export (`dsan_tf.saving.export` writes it): every name, in one place.

    WORKDIR/flags.txt        the configuration as flags, usable as --flagfile to repeat it
    WORKDIR/config.json      the configuration (model, model_config, data, training: what
                             the run is, compared with a re-run's) and what the run found
                             (vocabulary size, word vectors, parameters, data read, ...)
    WORKDIR/vocab.json       the vocabulary, and preprocessor.json the truncation length
                             (together: dsan_tf.data.NLIPreprocessor)
    WORKDIR/best.keras       the model with the best dev accuracy; best.json says when
    WORKDIR/history.csv      per-epoch metrics and seconds
    WORKDIR/backup/          BackupAndRestore state for resuming a killed run
    WORKDIR/tensorboard/     TensorBoard logs (train, validation, hparams)
    WORKDIR/results.json     final dev (and test) metrics of the best model
    WORKDIR/MODEL_CARD.md    what the model is, how well it did, how to repeat it

An export (EXPORT_DIR/<version>/) holds the SavedModel, `model.keras` (a copy of
best.keras), vocab.json, preprocessor.json and MODEL_CARD.md; an ensemble's adds
members/<i>/ with each member's export files.

Nothing here loads TensorFlow until a model is loaded (the study tools read histories).
"""

import csv
import dataclasses
import json
import os
import shutil
import subprocess
import sys

from dsan_tf import data
from dsan_tf.common.errors import UsageError
from dsan_tf.experiment.config import ExperimentConfig
from dsan_tf.models.config import described_fields
from dsan_tf.version import __version__

CONFIG, BEST, BEST_INFO = "config.json", "best.keras", "best.json"
# The preprocessor's files (its own names: the data package writes and reads them).
VOCAB, PREPROCESSOR = data.VOCABULARY_FILE, data.PREPROCESSOR_FILE
MODEL, MEMBERS = "model.keras", "members"  # an export's model and ensemble members
HISTORY, RESULTS, FLAGFILE = "history.csv", "results.json", "flags.txt"
CARD, BACKUP, TENSORBOARD = "MODEL_CARD.md", "backup", "tensorboard"
# Everything train writes into a run directory (--overwrite removes these, nothing else).
RUN_FILES = (FLAGFILE, CONFIG, VOCAB, PREPROCESSOR, BEST, BEST_INFO, HISTORY, RESULTS, CARD,
             BACKUP, TENSORBOARD)
# The configuration's parts in config.json (`ExperimentConfig.to_dict`); the rest of it is
# what the run found.
CONFIG_PARTS = ("model", "model_config", "data", "training")
# Fields a run may go on with changed: where files are, more epochs, and how the steps are
# compiled and padded (a run started on a GPU goes on on a CPU), not what they compute
# (more epochs train a finished run on: docs/TRAINING.md).
MAY_CHANGE = ("tfds_data_dir", "embeddings_cache_dir", "epochs", "shape_costs", "one_pass",
              "steps_per_execution", "sentence_programs")


def flag_values(config):
    """{name: value} of `config`'s fields that are flags (its family's, data's, training's;
    not `vocab_size` or `num_classes`), "model" first."""
    flagged = {field.name for part in (config.model_config, config.data, config.training)
               for field in described_fields(type(part))}
    return {name: value for name, value in config.flat().items()
            if name == "model" or name in flagged}


def as_flag(name, value):
    """`--name=value`, `--name` or `--noname` (booleans); None for an unset value."""
    if isinstance(value, bool):
        return f"--{'' if value else 'no'}{name}"
    return None if value is None else f"--{name}={value}"


def flag_lines(config, options=None):
    """The lines of flags.txt: every field of `config` (`ExperimentConfig`) that is a flag
    and the `RunOptions` that differ from their defaults, as flags that repeat the run
    (`--flagfile=flags.txt`)."""
    values = flag_values(config)
    if options is not None:
        defaults = type(options)()
        values.update({f.name: getattr(options, f.name) for f in dataclasses.fields(options)
                       if getattr(options, f.name) != getattr(defaults, f.name)})
    return [line for line in (as_flag(n, v) for n, v in values.items()) if line]


def recorded_config(values):
    """The `ExperimentConfig` a config.json's `values` hold, or None where it holds none
    (a run directory of dsan_tf 0.2 and earlier)."""
    if not all(part in values for part in CONFIG_PARTS):
        return None
    return ExperimentConfig.from_dict({part: values[part] for part in CONFIG_PARTS})


class RunDirectory:
    """Paths and files of one run directory.

    Args:
        workdir: the directory (`claim` makes it for experiments.train).
    """

    def __init__(self, workdir):
        if not workdir:
            raise UsageError("give --workdir, the run directory of experiments.train.")
        self.workdir = workdir

    def path(self, name):
        return os.path.join(self.workdir, name)

    def exists(self, name):
        return os.path.exists(self.path(name))

    def write_json(self, name, value):
        write_json(self.path(name), value)

    def read_json(self, name):
        return read_json(self.path(name))

    def claim(self, config, options=None, overwrite=False):
        """Makes this directory the run of `config` (`ExperimentConfig`, resolved), before
        anything else is written. A new or emptied directory gets config.json (the
        configuration) and flags.txt (the same as flags, and `options`' own). A directory
        whose config.json holds the same configuration, field by field but `MAY_CHANGE`,
        is that run: "resume" (no results.json yet), "finished", or "extend" (finished
        after all its epochs, and `config` asks for more). Any other configuration is
        refused with one sentence naming each differing field and both values, so that a
        directory never describes a model it does not hold. `overwrite` first removes what
        an earlier run wrote (train's files, nothing else).

        Returns: "new", "resume", "extend" or "finished".
        """
        if overwrite:
            self.discard()
        elif self.exists(CONFIG):
            return self._same_run(config, options)
        elif any(self.exists(name) for name in (FLAGFILE, BEST, HISTORY, BACKUP)):
            raise UsageError(f"workdir {self.workdir} holds files of a run but no "
                             f"{CONFIG}, so it cannot be resumed safely; give another "
                             "workdir, or overwrite to replace it.",
                             fields=("workdir", "overwrite"))
        os.makedirs(self.workdir, exist_ok=True)
        self.record(config, options)
        return "new"

    def record(self, config, options=None):
        """Writes config.json's configuration (keeping what the run found) and flags.txt."""
        found = self.read_json(CONFIG) if self.exists(CONFIG) else {}
        self.write_json(CONFIG, {**found, **config.to_dict()})
        with open(self.path(FLAGFILE), "w", encoding="utf-8") as stream:
            stream.write("\n".join(flag_lines(config, options)) + "\n")

    def _same_run(self, config, options):
        """`claim` of a directory that holds a run: its state, or the refusal."""
        recorded = recorded_config(self.read_json(CONFIG))
        if recorded is None:
            raise UsageError(f"workdir {self.workdir} holds a run of dsan_tf 0.2 or earlier, "
                             f"whose {CONFIG} does not record its whole configuration, so a "
                             "re-run cannot be compared with it; give another workdir, or "
                             "overwrite to replace it.", fields=("workdir", "overwrite"))
        changed = [(name, there, now) for name, there, now in recorded.differences(config)
                   if name not in MAY_CHANGE or (name == "epochs"
                                                 and not config.training.epochs_may_change())]
        if any(name == "model" for name, _, _ in changed):
            # Another family: its hyperparameters differ as a matter of course, and the
            # one line a user needs is the model's (issue 50, item 15).
            hyperparameters = {field.name for model in (recorded, config)
                               for field in dataclasses.fields(model.model_config)}
            changed = [item for item in changed if item[0] not in hyperparameters]
        if changed:
            shown = "; ".join(f"{name}: {there} there, {now} now"
                              for name, there, now in changed)
            raise UsageError(
                f"workdir {self.workdir} holds a run of another configuration ({shown}); "
                "give another workdir for a new run, or overwrite to replace this one.",
                fields=("workdir", "overwrite", *(name for name, _, _ in changed)))
        done = len(read_history(self.path(HISTORY)))
        if config.training.epochs < done:
            # Its best model may come from a later epoch (issue 50, item 13: the longer
            # model came back as "finished" without a word).
            raise UsageError(
                f"workdir {self.workdir} holds {done} trained epoch(s): epochs="
                f"{config.training.epochs} asks for fewer, and a run cannot be made shorter; "
                "give another workdir, or overwrite to train afresh.",
                fields=("workdir", "overwrite", "epochs"))
        state = "resume"
        if self.exists(RESULTS):
            ran_all = done >= recorded.training.epochs  # not stopped early by patience
            state = "extend" if ran_all and config.training.epochs > done else "finished"
        if state != "finished":
            self.record(config, options)
        return state

    def discard(self, remove_directory=False):
        """Removes what train writes here (`RUN_FILES`), and the directory itself when
        `remove_directory` and nothing else is left in it."""
        for name in RUN_FILES:
            path = self.path(name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        if remove_directory and os.path.isdir(self.workdir) and not os.listdir(self.workdir):
            os.rmdir(self.workdir)

    def require_finished(self):
        for name in (CONFIG, VOCAB, PREPROCESSOR, BEST):
            if not self.exists(name):
                raise UsageError(f"{self.path(name)} does not exist: is {self.workdir} a "
                                 "finished experiments.train run (--workdir)?")

    def load(self):
        """(`NLIClassifier`, its `NLIPreprocessor`, config dict) of a finished run: its
        model from the one loader (`dsan_tf.models.preset.load`, for inference: the
        optimizer's state, a loss-scale wrapper under mixed_float16, is not read)."""
        from dsan_tf.models import preset  # Keras loads here

        self.require_finished()
        model = preset.load(self.workdir, compile=False)
        return model, model.preprocessor, self.read_json(CONFIG)


def write_json(path, value):
    """Writes atomically (a reader never sees half a file), making the directory."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".partial", "w", encoding="utf-8") as stream:
        json.dump(value, stream, indent=2, sort_keys=True)
    os.replace(path + ".partial", path)


def read_history(path):
    """Rows of history.csv as dicts of floats (epoch and steps as int), epochs counted from
    1; [] when there is none. Files written before epochs were counted from 1 (their first
    epoch is 0) are read the same way."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as stream:
        rows = [{k: (int(float(v)) if k in ("epoch", "steps") else float(v))
                 for k, v in row.items()} for row in csv.DictReader(stream)]
    if rows and rows[0].get("epoch") == 0:
        for row in rows:
            row["epoch"] += 1
    return rows


def read_json(path):
    """The JSON value in `path`; `UsageError` naming the file and where it breaks when it
    is not JSON (a file cut off by a killed process, or edited by hand)."""
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # A record file ends with its closing bracket; one that does not was cut short.
        ending = ("; the file ends before its closing bracket: was it cut off?"
                  if not text.rstrip().endswith(("}", "]")) else ".")
        raise UsageError(f"{path} is not valid JSON ({error.msg}: line {error.lineno}, "
                         f"column {error.colno}){ending}") from None


def git_commit(path):
    """The commit of the checkout holding `path` ("-dirty" when files differ from it), or
    None outside a checkout (an installed package) or without git."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                              cwd=path, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance():
    """What produced a result: package versions (Keras, its backend and that backend's
    framework; TensorFlow's where it is loaded) and, in a git checkout, the commit (with
    "-dirty" when files differ from it)."""
    import keras  # loaded by the run that asks; kept out of the study tools' start

    backend = keras.backend.backend()
    framework = sys.modules.get(backend)
    tf = sys.modules.get("tensorflow")

    return {"dsan_tf": __version__,
            "git_commit": git_commit(os.path.dirname(os.path.abspath(__file__))),
            "tensorflow": tf.__version__ if tf else None, "keras": keras.__version__,
            "keras_backend": backend,
            "backend_version": getattr(framework, "__version__", None)}
