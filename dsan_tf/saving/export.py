"""Exports for serving: the one export of trained runs (`export_runs`: a run's best model,
or an ensemble of runs; for `train --export_dir`, `dsan-export` and `dsan-ensemble
--export_dir` alike). It writes, in TF Serving's layout EXPORT_DIR/<version>/, a
SavedModel of raw strings that needs TensorFlow only, plus what a Keras user reloads (file
names: `dsan_tf.core.rundir`).

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


def export_runs(runs, export_dir, version=None, unfinished=False, results=None):
    """Exports trained runs to EXPORT_DIR/<version>/ (the next free version by default):
    the one export behind `train --export_dir`, `dsan-export` and `dsan-ensemble
    --export_dir`.

    One run: its best model (the SavedModel, model.keras, the preprocessor and the model
    card). Several: an ensemble that averages their probabilities (one SavedModel whose
    `serving_default` runs every member, the ensemble's card, and each member's model
    files in members/<i>/, 1 = the first, which `dsan_tf.load` reads). The model files
    are copied first and the SavedModel made from the copies: a run still training may
    replace its best.keras meanwhile.

    Args:
        runs: `RunDirectory`s, one or more.
        export_dir: TF Serving's model directory.
        version: the export's version (default: the next free one).
        unfinished: export a run still training or stopped before its end (refused
            otherwise; said on stderr either way).
        results: an ensemble's {source spec: {"ensemble": report, ...}} for its card
            (`dsan_tf.evaluation.evaluator.evaluate_ensemble`), or None.

    Returns:
        The version's directory.
    """
    for run in runs:
        run.require_finished(unfinished_ok=unfinished)

    def write(partial):
        atomic.write_point("export_files")
        if len(runs) == 1:
            folders = [partial]
        else:
            folders = [os.path.join(partial, run_files.MEMBERS, str(number))
                       for number in range(1, len(runs) + 1)]
            model_card.write_ensemble(runs, results or {}, partial)
        for run, folder in zip(runs, folders):
            _copy_model_files(run, folder)
        atomic.write_point("export_savedmodel")
        models = [preset.load(folder, compile=False) for folder in folders]
        export(models[0] if len(models) == 1 else NLIEnsemble(models), partial,
               keras_file=False)

    return _build(export_dir, version, write)
