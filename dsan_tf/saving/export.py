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


def _copy_model_files(run, target, say=print):
    """model.keras (the run's best model, checked against its record: `_best_model`),
    vocab.json and preprocessor.json (written by the model's own preprocessor, so that a
    damaged copy in the run never reaches an export) and the model card of `run` into
    `target`."""
    os.makedirs(target, exist_ok=True)
    model = _best_model(run, os.path.join(target, run_files.MODEL), say)
    if model.preprocessor is None:  # a file written before the classifier held it
        from dsan_tf.data.preprocessor import NLIPreprocessor

        NLIPreprocessor.load(run.workdir).save(target)  # a damaged file: DataError
    else:
        model.preprocessor.save(target)
        for name in (run_files.VOCAB, run_files.PREPROCESSOR):
            _check_view(run, name, os.path.join(target, name), say)
    model_card.write(run, target)


def _best_model(run, target, say):
    """Copies the run's best model to `target` and returns it loaded: best.keras where it
    is the model the record lists (results.json's weights digest, or the newest intact
    checkpoint's file), else the newest intact checkpoint's copy (said, and best.keras
    written again from it where no process is training the run); `UsageError` naming
    both where neither is."""
    try:
        checkpoint = run.checkpoint(say)
    except UsageError:  # none intact: results.json's digest still checks best.keras
        checkpoint = None
    kept = checkpoint.file(run_files.BEST) if checkpoint else None
    expected = _results_digest(run)
    for source in (run.path(run_files.BEST), kept):
        if source is None or not os.path.exists(source):
            continue
        shutil.copyfile(source, target)
        try:
            model = preset.load(target, compile=False)
        except ValueError:  # NoModel, DataError: damaged
            continue
        if expected is None and kept and source != kept and \
                run_files.file_digest(source) != run_files.file_digest(kept):
            continue  # no results to check it by: the record's file decides
        if expected is not None and run_files.weights_digest(model) != expected:
            continue
        if source == kept:
            say(f"{run.path(run_files.BEST)} is not the run's best model (damaged or "
                f"replaced); exported the copy in {checkpoint.path}.")
            _heal(run, kept, run.path(run_files.BEST), say)
        return model
    raise UsageError(f"neither {run.path(run_files.BEST)} nor a checkpoint of "
                     f"{run.workdir} holds the best model its results.json describes (both "
                     "damaged); dsan-train --workdir of the run trains it again.")


def _results_digest(run):
    """results.json's best_weights_sha256, or None (an unfinished run, a damaged file)."""
    try:
        results = run.read_json(run_files.RESULTS) if run.exists(run_files.RESULTS) else {}
    except UsageError:
        return None
    return results.get("best_weights_sha256") if isinstance(results, dict) else None


def _check_view(run, name, exported, say):
    """Says (and writes again, where no process trains the run) when the run's file `name`
    is not the one the model's preprocessor wrote (`exported`)."""
    view = run.path(name)
    if os.path.exists(view) and filecmp.cmp(view, exported, shallow=False):
        return
    say(f"{view} is not the one best.keras holds (damaged or missing); the export holds "
        "the model's own.")
    _heal(run, exported, view, say)


def _heal(run, source, view, say):
    """Writes the run's `view` again as a copy of `source`, where this process can take
    the run's lock (a run being trained is its trainer's to write)."""
    try:
        run.lock()
    except UsageError:
        return
    try:
        atomic.copy_file(source, view)
        say(f"{view} written again.")
    finally:
        run.unlock()


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
    partial = tempfile.mkdtemp(prefix=f".export.{os.getpid()}.", suffix=".partial",
                               dir=export_dir)
    # mkdtemp's 0700 would hide the version from a server running as another user: the
    # folder gets the mode any folder made here gets (the umask's).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(partial, 0o777 & ~umask)
    return partial


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
    from dsan_tf.common.frameworks import tf

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
        export(models[0] if len(models) == 1 else NLIEnsemble(models, compile=False), partial,
               keras_file=False)

    return _build(export_dir, version, write)
