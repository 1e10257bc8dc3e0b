"""The run directory that train writes and evaluate, export, predict and visualize read.

    WORKDIR/flags.txt        the resolved flags, usable as --flagfile to repeat the run
    WORKDIR/config.json      model name, model configuration, text settings, data reports
    WORKDIR/vocab.json       the vocabulary, and preprocessor.json the truncation length
                             (together: dsan_tf.data.NLIPreprocessor)
    WORKDIR/best.keras       the model with the best dev accuracy; best.json says when
    WORKDIR/history.csv      per-epoch metrics and seconds
    WORKDIR/backup/          BackupAndRestore state for resuming a killed run
    WORKDIR/tensorboard/     TensorBoard logs (train, validation, hparams)
    WORKDIR/results.json     final dev (and test) metrics of the best model
"""

import json
import os
import subprocess

from experiments.program import UsageError

CONFIG, VOCAB, BEST, BEST_INFO = "config.json", "vocab.json", "best.keras", "best.json"
PREPROCESSOR, HISTORY, RESULTS, FLAGFILE = (
    "preprocessor.json", "history.csv", "results.json", "flags.txt")


class RunDirectory:
    """Paths and files of one run directory.

    Args:
        workdir: the directory.
        create: make it (and its parents) if it does not exist (`experiments.train`).
    """

    def __init__(self, workdir, create=False):
        if not workdir:
            raise UsageError("give --workdir, the run directory of experiments.train.")
        self.workdir = workdir
        if create:
            os.makedirs(workdir, exist_ok=True)

    def path(self, name):
        return os.path.join(self.workdir, name)

    def exists(self, name):
        return os.path.exists(self.path(name))

    def write_json(self, name, value):
        write_json(self.path(name), value)

    def read_json(self, name):
        return read_json(self.path(name))

    def require_finished(self):
        for name in (CONFIG, VOCAB, PREPROCESSOR, BEST):
            if not self.exists(name):
                raise UsageError(f"{self.path(name)} does not exist: is {self.workdir} a "
                                 "finished experiments.train run (--workdir)?")

    def load(self):
        """(`NLIClassifier`, `NLIPreprocessor`, config dict) of a finished run."""
        import keras

        import dsan_tf.models  # noqa: F401  (registers the models for load_model)
        from dsan_tf.data import NLIPreprocessor

        self.require_finished()
        config = self.read_json(CONFIG)
        # Inference only: the optimizer's state (a loss-scale wrapper under mixed_float16)
        # is not needed.
        model = keras.models.load_model(self.path(BEST), compile=False)
        return model, NLIPreprocessor.load(self.workdir), config


def write_json(path, value):
    """Writes atomically (a reader never sees half a file), making the directory."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".partial", "w", encoding="utf-8") as stream:
        json.dump(value, stream, indent=2, sort_keys=True)
    os.replace(path + ".partial", path)


def read_json(path):
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def provenance():
    """What produced a result: package versions and, in a git checkout, the commit (with
    "-dirty" when files differ from it)."""
    import keras
    import tensorflow as tf

    import dsan_tf

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                                cwd=here, capture_output=True, text=True, timeout=10,
                                check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None  # not a checkout (an installed package) or no git
    return {"dsan_tf": dsan_tf.__version__, "git_commit": commit,
            "tensorflow": tf.__version__, "keras": keras.__version__}
