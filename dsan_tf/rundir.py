"""The run directory that train writes and evaluate, export, predict and visualize read,
and the file names of an export (`dsan_tf.export` writes it): every name, in one place.

    WORKDIR/flags.txt        the resolved flags, usable as --flagfile to repeat the run
    WORKDIR/config.json      model name, model configuration, text settings, data reports
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
import json
import os
import shutil
import subprocess
import sys

import dsan_tf
from dsan_tf import data, models
from dsan_tf.errors import UsageError

CONFIG, BEST, BEST_INFO = "config.json", "best.keras", "best.json"
# The preprocessor's files (its own names: the data package writes and reads them).
VOCAB, PREPROCESSOR = data.VOCABULARY_FILE, data.PREPROCESSOR_FILE
MODEL, MEMBERS = "model.keras", "members"  # an export's model and ensemble members
HISTORY, RESULTS, FLAGFILE = "history.csv", "results.json", "flags.txt"
CARD, BACKUP, TENSORBOARD = "MODEL_CARD.md", "backup", "tensorboard"
# Everything train writes into a run directory (--overwrite removes these, nothing else).
RUN_FILES = (FLAGFILE, CONFIG, VOCAB, PREPROCESSOR, BEST, BEST_INFO, HISTORY, RESULTS, CARD,
             BACKUP, TENSORBOARD)
# Flags that say where outputs go, not what the run is: they may change between sittings.
NOT_RUN_FLAGS = ("workdir", "export_dir")


def read_flagfile(path):
    """{flag name: value as written} of a flags.txt (`--name=value`, `--name`, `--noname`)."""
    with open(path, encoding="utf-8") as stream:
        return read_flagfile_lines(stream)


def _normalized(values):
    """`--noname` as name=false, so that a boolean compares with its other spelling."""
    result = {}
    for name, value in values.items():
        if name.startswith("no") and value == "true" and name[2:] not in values:
            result[name[2:]] = "false"
        else:
            result[name] = value
    return {name: value for name, value in result.items() if name not in NOT_RUN_FLAGS}


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

    def claim(self, flag_lines, overwrite=False):
        """Makes this directory the run `flag_lines` (a flags.txt's lines) describe, before
        anything else is written: a new or emptied directory gets flags.txt; a directory
        whose flags.txt names the same run is resumed (returns "finished" once its
        results.json exists, else "resume"); any other flags are refused with one sentence
        naming them, so that a directory never describes a model it does not hold.
        `overwrite` first removes what an earlier run wrote (train's files, nothing else).

        Returns: "new", "resume" or "finished".
        """
        if overwrite:
            self.discard()
        elif self.exists(FLAGFILE):
            recorded = _normalized(read_flagfile(self.path(FLAGFILE)))
            wanted = _normalized(read_flagfile_lines(flag_lines))
            changed = sorted(set(recorded) | set(wanted),
                             key=lambda n: (n not in recorded or n not in wanted, n))
            changed = [n for n in changed if recorded.get(n) != wanted.get(n)]
            if changed:
                shown = "; ".join(f"--{n}: {recorded.get(n, 'unset')} there, "
                                  f"{wanted.get(n, 'unset')} now" for n in changed[:5])
                more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
                raise UsageError(
                    f"--workdir={self.workdir} holds a run trained with other flags ({shown}"
                    f"{more}); give a new --workdir for a new run, or add --overwrite to "
                    "replace this one.")
            return "finished" if self.exists(RESULTS) else "resume"
        elif any(self.exists(name) for name in (CONFIG, BEST, HISTORY, BACKUP)):
            raise UsageError(f"--workdir={self.workdir} holds files of a run but no "
                             f"{FLAGFILE}, so it cannot be resumed safely; give a new "
                             "--workdir, or add --overwrite to replace it.")
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.path(FLAGFILE), "w", encoding="utf-8") as stream:
            stream.write("\n".join(flag_lines) + "\n")
        return "new"

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
        """(`NLIClassifier`, `NLIPreprocessor`, config dict) of a finished run."""
        self.require_finished()
        return (*load_model_files(self.workdir), self.read_json(CONFIG))


def model_file(directory):
    """The model of a run directory (best.keras) or an export (model.keras) that has its
    preprocessor beside it; None when `directory` holds neither."""
    for name in (BEST, MODEL):
        path = os.path.join(directory, name)
        if os.path.exists(path) and os.path.exists(os.path.join(directory, PREPROCESSOR)):
            return path
    return None


def load_model_files(directory):
    """(`NLIClassifier`, `NLIPreprocessor`) of a run directory or an export: the one
    loader of a model's files, for every program and `dsan_tf.load`."""
    path = model_file(directory)
    if path is None:
        raise UsageError(f"{directory} holds no {BEST} (or {MODEL}) with {PREPROCESSOR} "
                         "beside it.")
    # Inference only: the optimizer's state (a loss-scale wrapper under mixed_float16)
    # is not needed.
    model = models.load_model(path, compile=False)  # Keras loads here
    return model, data.NLIPreprocessor.load(directory)


def read_flagfile_lines(lines):
    """As `read_flagfile`, from the lines themselves (comments and blank lines skipped)."""
    values = {}
    for line in lines:
        if line.strip().startswith("--"):
            name, has_value, value = line.strip()[2:].partition("=")
            values[name] = value if has_value else "true"
    return values


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
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def provenance():
    """What produced a result: package versions (Keras, its backend and that backend's
    framework; TensorFlow's where it is loaded) and, in a git checkout, the commit (with
    "-dirty" when files differ from it)."""
    import keras  # loaded by the run that asks; kept out of the study tools' start

    backend = keras.backend.backend()
    framework = sys.modules.get(backend)
    tf = sys.modules.get("tensorflow")

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                                cwd=here, capture_output=True, text=True, timeout=10,
                                check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None  # not a checkout (an installed package) or no git
    return {"dsan_tf": dsan_tf.__version__, "git_commit": commit,
            "tensorflow": tf.__version__ if tf else None, "keras": keras.__version__,
            "keras_backend": backend,
            "backend_version": getattr(framework, "__version__", None)}
