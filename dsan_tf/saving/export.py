"""Exports for serving: the one export of a trained run (`export_run`, for `train
--export_dir` and `export` alike) and of an ensemble of runs (`export_ensemble`). Each
writes, in TF Serving's layout EXPORT_DIR/<version>/, a SavedModel of raw strings that
needs TensorFlow only, plus what a Keras user reloads (file names: `dsan_tf.core.rundir`).

A version appears whole or not at all: the export is written into a temporary folder in
EXPORT_DIR (a name TF Serving does not take for a version) and renamed to the next free
version number, taken by the rename itself, so that two exporters never share a version
and a watcher never sees half of one (write points: `atomic.WRITE_POINTS["export"]`).
"""

import errno
import filecmp
import os
import shutil
import tempfile

from dsan_tf.common import atomic
from dsan_tf.common.errors import UsageError
from dsan_tf.core import rundir as run_files
from dsan_tf.models import preset
from dsan_tf.models.ensemble import NLIEnsemble
from dsan_tf.saving import model_card
from dsan_tf.saving.serving import export, version_dir


def _copy_model_files(run, target):
    """model.keras (the run's best.keras), vocab.json, preprocessor.json and the model
    card of `run` into `target`."""
    os.makedirs(target, exist_ok=True)
    shutil.copyfile(run.path(run_files.BEST), os.path.join(target, run_files.MODEL))
    for name in (run_files.VOCAB, run_files.PREPROCESSOR):
        shutil.copyfile(run.path(name), os.path.join(target, name))
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


def _building(export_dir, version):
    """A new temporary folder in `export_dir` to build an export in; `UsageError` when the
    asked `version` exists already."""
    if version is not None and os.path.exists(version_dir(export_dir, version)):
        raise UsageError(f"{version_dir(export_dir, version)} exists: choose another "
                         "--version or leave it out.", fields=("version",))
    os.makedirs(export_dir, exist_ok=True)
    for name in os.listdir(export_dir):  # left by an exporter killed meanwhile
        parts = name.split(".")
        if (name.startswith(".export.") and name.endswith(".partial") and len(parts) > 3
                and parts[2].isdigit() and not _alive(int(parts[2]))):
            shutil.rmtree(os.path.join(export_dir, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f".export.{os.getpid()}.", suffix=".partial",
                            dir=export_dir)


def _alive(pid):
    """Whether process `pid` runs (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _publish(partial, export_dir, version):
    """Renames the complete export `partial` to EXPORT_DIR/<version> (the next free one
    when None: a version another exporter took meanwhile makes the rename fail, and the
    next number is tried). Returns the version's directory."""
    for folder, _, names in os.walk(partial):
        for name in names:
            atomic.fsync_path(os.path.join(folder, name))
    while True:
        target = version_dir(export_dir, version)
        atomic.write_point("publish")  # another exporter may take `target` meanwhile
        try:
            os.rename(partial, target)  # fails onto a version that holds files
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST) or version is not None:
                shutil.rmtree(partial, ignore_errors=True)
                if version is not None:
                    raise UsageError(f"{target} exists: choose another --version or leave "
                                     "it out.", fields=("version",)) from None
                raise
            continue
        atomic.fsync_path(export_dir)
        return target


def _build(export_dir, version, write):
    """`write(partial)` into a new temporary folder, published as a version; the folder
    goes when `write` fails (a full disk, Ctrl-C)."""
    import tensorflow as tf

    partial = _building(export_dir, version)
    try:
        write(partial)
    except tf.errors.OpError as error:  # the SavedModel's writer: a full disk, ...
        shutil.rmtree(partial, ignore_errors=True)
        raise OSError(None, error.message.split("\n")[0], export_dir) from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return _publish(partial, export_dir, version)


def export_run(run, export_dir, version=None, unfinished=False):
    """Exports the best model of the finished `RunDirectory` `run` to
    EXPORT_DIR/<version>/ (the next free version by default): the SavedModel, model.keras,
    the preprocessor and the model card. A run still training or stopped before its end
    is refused unless `unfinished`. Returns the version's directory."""
    run.require_finished(unfinished_ok=unfinished)

    def write(partial):
        atomic.write_point("export_files")
        # The model files first, and the SavedModel of that copy: a run still training
        # may replace its best.keras meanwhile.
        _copy_model_files(run, partial)
        atomic.write_point("export_savedmodel")
        export(preset.load(partial, compile=False), partial, keras_file=False)

    return _build(export_dir, version, write)


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
    def write(partial):
        atomic.write_point("export_files")
        # Each member's files go into members/<i>/, which `dsan_tf.load` reads.
        for number, member in enumerate(members, 1):
            _copy_model_files(member.run, os.path.join(partial, run_files.MEMBERS,
                                                       str(number)))
        model_card.write_ensemble([member.run for member in members], results or {},
                                  partial)
        atomic.write_point("export_savedmodel")
        export(NLIEnsemble([member.model for member in members]), partial, keras_file=False)

    return _build(export_dir, version, write)
