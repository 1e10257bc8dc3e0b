"""Exports for serving: the one export of a trained run (`export_run`, for `train
--export_dir` and `export` alike) and of an ensemble of runs (`export_ensemble`). Each
writes, in TF Serving's layout EXPORT_DIR/<version>/, a SavedModel of raw strings that
needs TensorFlow only, plus what a Keras user reloads (file names: `dsan_tf.experiment.rundir`).
"""

import filecmp
import os
import shutil

from dsan_tf.common.errors import UsageError
from dsan_tf.experiment import rundir as run_files
from dsan_tf.models import preset
from dsan_tf.models.ensemble import NLIEnsemble
from dsan_tf.saving import model_card
from dsan_tf.saving.serving import export, version_dir


def _target(export_dir, version=None):
    target = version_dir(export_dir, version)
    if os.path.exists(target):
        raise UsageError(f"{target} exists: choose another --version or leave it out.")
    return target


def _copy_model_files(run, target):
    """model.keras (the run's best.keras), vocab.json, preprocessor.json and the model
    card of `run` into `target`."""
    os.makedirs(target, exist_ok=True)
    shutil.copy(run.path(run_files.BEST), os.path.join(target, run_files.MODEL))
    for name in (run_files.VOCAB, run_files.PREPROCESSOR):
        shutil.copy(run.path(name), os.path.join(target, name))
    model_card.write(run, target)


def exported_version(run, export_dir):
    """The newest version in `export_dir` that holds `run`'s best model as it is now
    (model.keras byte for byte the run's best.keras, a SavedModel beside it), or None."""
    if not os.path.isdir(export_dir):
        return None
    best = run.path(run_files.BEST)
    for version in preset.versions(export_dir):
        target = os.path.join(export_dir, str(version))
        model = os.path.join(target, run_files.MODEL)
        if (os.path.exists(os.path.join(target, "saved_model.pb")) and os.path.exists(model)
                and filecmp.cmp(model, best, shallow=False)):
            return target
    return None


def export_run(run, export_dir, version=None):
    """Exports the best model of the finished `RunDirectory` `run` to
    EXPORT_DIR/<version>/ (the next free version by default): the SavedModel, model.keras,
    the preprocessor and the model card. Returns the version's directory."""
    target = _target(export_dir, version)
    model, _, _ = run.load()
    export(model, target, keras_file=False)  # the run's best.keras is copied instead
    _copy_model_files(run, target)
    return target


def export_ensemble(members, export_dir, results=None, version=None):
    """Exports an ensemble that averages its members' probabilities: one SavedModel whose
    `serving_default` runs every member, the ensemble's card (with `results`, the
    `dsan_tf.evaluation.evaluator.evaluate_ensemble` reports by source, when measured), and each
    member's model files in members/<i>/ (1 = the first).

    Args:
        members: `dsan_tf.evaluation.evaluator.Member`s (loaded runs), at least two.
        export_dir: TF Serving's model directory.
        results: {source spec: {"ensemble": report, ...}}, or None.
        version: the export's version (default: the next free one).

    Returns:
        The version's directory.
    """
    target = _target(export_dir, version)
    # Each member's files go into members/<i>/, which `dsan_tf.load` reads.
    export(NLIEnsemble([member.model for member in members]), target, keras_file=False)
    for number, member in enumerate(members, 1):
        _copy_model_files(member.run, os.path.join(target, run_files.MEMBERS, str(number)))
    model_card.write_ensemble([member.run for member in members], results or {}, target)
    return target
