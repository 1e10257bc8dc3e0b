"""The run directory shared by train, evaluate, export and predict.

    WORKDIR/flags.txt        the resolved flags, usable as --flagfile to repeat the run
    WORKDIR/config.json      model name, model configuration, text settings, data reports
    WORKDIR/vocab.json       the vocabulary (dsan_tf.data.Vocabulary)
    WORKDIR/best.keras       the model with the best dev accuracy; best.json says when
    WORKDIR/history.csv      per-epoch metrics and seconds
    WORKDIR/backup/          BackupAndRestore state for resuming a killed run
    WORKDIR/tensorboard/     TensorBoard logs (train, validation, hparams)
    WORKDIR/results.json     final dev (and test) metrics of the best model
"""

import json
import os
import sys

from experiments import flags as project_flags

FLAGS = project_flags.FLAGS
CONFIG, VOCAB, BEST, BEST_INFO = "config.json", "vocab.json", "best.keras", "best.json"


def fail(message):
    """Stops the program with one clear sentence, no traceback."""
    sys.exit(f"error: {message}")


def start(argv, **required):
    """The start of every program: no positional arguments, each required flag given
    (`name="what the user should give"`), absl logging at WARNING (TF's INFO lines would
    bury the program's own output)."""
    from absl import logging

    if len(argv) > 1:
        fail(f"unexpected arguments {argv[1:]}; every option is a --flag.")
    for name, what in required.items():
        if not FLAGS[name].value:
            fail(f"give --{name}, {what}.")
    logging.set_verbosity(logging.WARNING)


def provenance():
    """What produced a result: package versions and, in a git checkout, the commit (with
    "-dirty" when files differ from it)."""
    import subprocess

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


def path(name, workdir=None):
    return os.path.join(workdir or FLAGS.workdir, name)


def resolved_flags():
    """Our flags (not absl's or TF's) with their values, as flagfile lines."""
    ours = FLAGS.get_key_flags_for_module(project_flags.__name__)
    return [flag.serialize() for flag in sorted(ours, key=lambda f: f.name)
            if flag.value is not None and flag.name not in _NOT_RUN_FLAGS]


# Flags of other programs, meaningless in a training run's flagfile.
_NOT_RUN_FLAGS = {"vocab_size", "pipeline_epochs", "train_steps", "data", "output", "premise",
                  "hypothesis", "input", "shared_data", "variants",
                  "benchmark_lengths", "sweep_lengths", "benchmark_seconds"}


def write_json(name, value):
    temporary = path(name) + ".partial"
    with open(temporary, "w", encoding="utf-8") as stream:
        json.dump(value, stream, indent=2, sort_keys=True)
    os.replace(temporary, path(name))


def read_json(name):
    with open(path(name), encoding="utf-8") as stream:
        return json.load(stream)


def require_workdir(workdir=None):
    workdir = workdir or FLAGS.workdir
    if not workdir:
        fail("give --workdir, the run directory of experiments.train.")
    for name in (CONFIG, VOCAB, BEST):
        if not os.path.exists(path(name, workdir)):
            fail(f"{path(name, workdir)} does not exist: is {workdir} a finished "
                 "experiments.train run (--workdir)?")


def load_run(workdir=None):
    """(keras model, Vocabulary, config dict) of a trained run (default: --workdir)."""
    import keras

    import dsan_tf  # noqa: F401  (registers the layers for load_model)
    from dsan_tf.data import Vocabulary

    require_workdir(workdir)
    with open(path(CONFIG, workdir), encoding="utf-8") as stream:
        config = json.load(stream)
    # Inference only: the optimizer's state (a loss-scale wrapper under mixed_float16) is not needed.
    model = keras.models.load_model(path(BEST, workdir), compile=False)
    return model, Vocabulary.load(path(VOCAB, workdir)), config
