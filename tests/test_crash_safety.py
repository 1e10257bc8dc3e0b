"""A run directory survives a kill at every write point, a second process, a damaged record:
a tiny run (3 epochs, dropout, batch summaries every 5 steps) is stopped at each point of
an epoch's commit sequence (`dsan_tf.common.atomic.WRITE_POINTS`, listed there once), resumed
with the same call, and compared for exact equality with a run never interrupted: every
history row (but the seconds), every TensorBoard value with its step, best.json,
results.json's accuracies and the best weights' SHA-256."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from dsan_tf.common import atomic
from dsan_tf.common.errors import UsageError
from dsan_tf.core import rundir
from helpers import ENV, ROOT

pytestmark = pytest.mark.tensorflow

TAGS_THAT_TIME = ("epoch_seconds",)


class Killed(BaseException):
    """Stands for SIGKILL in this process (a child's real SIGKILL is tested below)."""


def _config(epochs=3):
    import dsan_tf
    from dsan_tf.core.config import DataConfig, ExperimentConfig, TrainingConfig

    return ExperimentConfig(
        model="cbow", model_config=dsan_tf.model_config("cbow", embedding_dim=16,
                                                        trainable_embeddings=True,
                                                        dropout=0.3),
        data=DataConfig(train_data="synthetic:word_order/train",
                        dev_data="synthetic:word_order/dev", embeddings="random",
                        batch_size=32, max_length=32),
        training=TrainingConfig(epochs=epochs, learning_rate=3e-4))


def _options():
    from dsan_tf.core.config import RunPolicy

    return RunPolicy(compile_ahead=False, jit_compile=False, bounded_shapes=True)


def _outputs():
    from dsan_tf.core.config import RunOutputs

    return RunOutputs(log_every_steps=5)


def observed(workdir):
    """Everything a user reads of a run that must not depend on interruptions."""
    import tensorflow as tf

    history = [{k: v for k, v in row.items() if k != "seconds"}
               for row in rundir.read_history(os.path.join(workdir, "history.csv"))]
    points = []
    for folder in ("train", "validation"):
        for path in sorted((pathlib.Path(workdir) / "tensorboard" / folder).glob("*tfevents*")):
            for event in tf.compat.v1.train.summary_iterator(str(path)):
                for value in event.summary.value:
                    if value.tag not in TAGS_THAT_TIME:
                        points.append((folder, value.tag, event.step,
                                       float(tf.make_ndarray(value.tensor))))
    results = json.loads((pathlib.Path(workdir) / "results.json").read_text())
    checkpoints = sorted(os.listdir(os.path.join(workdir, "checkpoints")))
    return {"history": history, "tensorboard": sorted(points), "checkpoints": checkpoints,
            "best": json.loads((pathlib.Path(workdir) / "best.json").read_text()),
            "results": {k: results[k] for k in ("best_epoch", "dev_accuracy", "epochs",
                                                "best_weights_sha256")}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The run never interrupted (its directory: tests that change it work on a copy)."""
    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver

    workdir = tmp_path_factory.mktemp("whole") / "run"
    driver.train_run(str(workdir), NLITask(_config(), _options()), outputs=_outputs())
    return workdir


@pytest.fixture(scope="module")
def uninterrupted(finished):
    return observed(str(finished))


def _copy(run, workdir):
    import shutil

    shutil.copytree(run, workdir, ignore=shutil.ignore_patterns("lock"))
    return workdir


def _kill_in_process(point, count):
    """A fault hook raising `Killed` at the `count`-th time `point` is reached."""
    seen = []

    def hook(reached):
        if reached == point:
            seen.append(point)
            if len(seen) == count:
                raise Killed(point)
    return hook


def _close_event_writers(monkeypatch):
    """Collects the TensorBoard callbacks a run makes; returns a function that closes
    their writers (what a kill leaves is what the OS had: the test then flushes what the
    process had buffered, the harder case for the resumed run)."""
    from dsan_tf.training import driver

    made, original = [], driver.make_callbacks

    def recording(*args, **kwargs):
        result = original(*args, **kwargs)
        made.extend(c for c in result[0] if hasattr(c, "_close_writers"))
        return result

    monkeypatch.setattr(driver, "make_callbacks", recording)
    return lambda: [callback._close_writers() for callback in made]


# Every point of epoch 2's commit, each in turn: a kill before the commit leaves epoch 2 to
# train again, where the next kill comes; then the last epoch's commit and the step after it
# (only the results are left to write then). Each: (point, epochs committed after the kill).
KILLS = [*((point, 1) for point in atomic.WRITE_POINTS["epoch"][:-1]), ("prune", 2),
         ("commit", 2), ("prune", 3)]


def test_a_kill_at_every_write_point_resumes_to_the_uninterrupted_run(
        uninterrupted, tmp_path, monkeypatch):
    """Killed at every point of an epoch's commit sequence in turn, each time resumed by
    the same call: the run ends exactly as the one never interrupted, with each epoch's
    row and point once, and after each kill the record says what is done."""
    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver

    workdir = str(tmp_path / "run")
    close = _close_event_writers(monkeypatch)
    # The first run is killed in epoch 2 (the second time a point is reached).
    for number, (point, committed) in enumerate(KILLS):
        previous = atomic.set_fault_hook(_kill_in_process(point, 2 if number == 0 else 1))
        try:
            with pytest.raises(Killed):
                driver.train_run(workdir, NLITask(_config(), _options()), outputs=_outputs())
        finally:
            atomic.set_fault_hook(previous)
        close()
        run = rundir.RunDirectory(workdir)
        assert (point, run.epochs_done()) == (point, committed)
        assert run.holder() is None  # the lock went with the process
        # Ctrl-C or any exception leaves the views as the record says at once.
        assert len(rundir.read_history(run.path("history.csv"))) == committed
    driver.train_run(workdir, NLITask(_config(), _options()), outputs=_outputs())
    assert observed(workdir) == uninterrupted


def test_a_sigkill_resumes_to_the_uninterrupted_run(uninterrupted, tmp_path):
    """A real SIGKILL of a child process (`atomic.kill_at`), in epoch 2 before its commit
    (history.csv and TensorBoard hold the epoch, the new best model is written): the next
    run says what it trains and ends as the run never interrupted."""
    workdir = str(tmp_path / "run")
    child = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from dsan_tf.common import atomic
        from test_crash_safety import _config, _options, _outputs
        if len(sys.argv) > 1:
            atomic.set_fault_hook(atomic.kill_at(sys.argv[1], int(sys.argv[2])))
        from dsan_tf.core.task import NLITask
        from dsan_tf.training import driver
        driver.train_run({workdir!r}, NLITask(_config(), _options()), outputs=_outputs())
        """)
    runs = [subprocess.run([sys.executable, "-c", child, *kill], cwd=ROOT, env=ENV,
                           capture_output=True, text=True, timeout=300)
            for kill in (["commit", "2"], [])]
    assert [run.returncode for run in runs] == [-9, 0], runs[-1].stderr[-2000:]
    assert f"resuming {workdir}: 1 epoch(s) done, training from epoch 2" in runs[1].stdout
    assert observed(workdir) == uninterrupted


def test_a_second_training_of_a_run_is_refused_naming_the_first(tmp_path):
    """The lock: while one process trains a run directory, another is refused in one
    sentence naming it; the kernel releases it when that process ends, however."""
    workdir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom dsan_tf.core import rundir\n"
         f"rundir.RunDirectory({str(workdir)!r}).lock()\nprint('locked', flush=True)\n"
         "time.sleep(60)"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        from dsan_tf.core.task import NLITask
        from dsan_tf.training import driver

        with pytest.raises(UsageError, match=rf"workdir {workdir} is being trained by "
                                             rf"process {holder.pid} \("):
            driver.train_run(str(workdir), NLITask(_config(1), _options()), outputs=_outputs())
        assert rundir.RunDirectory(str(workdir)).holder().startswith(f"process {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    assert rundir.RunDirectory(str(workdir)).holder() is None


FLAGS = ["--model=cbow", "--embedding_dim=16", "--trainable_embeddings", "--dropout=0.3",
         "--train_data=synthetic:word_order/train", "--dev_data=synthetic:word_order/dev",
         "--embeddings=random", "--batch_size=32", "--max_length=32", "--bounded_shapes",
         "--epochs=3", "--learning_rate=3e-4", "--nojit_compile", "--log_every_steps=5",
         "--nocompile_ahead"]


def test_a_full_disk_is_one_sentence_and_the_run_resumes(uninterrupted, tmp_path):
    """No space left while epoch 2's checkpoint is written: one sentence naming the file,
    the fault and what is kept, no traceback, no temporary folder left; the same command
    then resumes to the uninterrupted run."""
    from helpers import cli

    workdir = tmp_path / "run"

    def full(point):
        if point == "checkpoint_weights" and (workdir / "checkpoints" / "epoch-000001").exists():
            raise OSError(28, "No space left on device", str(workdir / "checkpoints"))

    previous = atomic.set_fault_hook(full)
    try:
        failed = cli("train", f"--workdir={workdir}", *FLAGS)
    finally:
        atomic.set_fault_hook(previous)
    assert failed.returncode == 1
    (line,) = failed.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"error: could not write {workdir}/checkpoints: No space left on "
                           f"device; 1 epoch(s) of {workdir} are kept; `")
    assert "Traceback" not in failed.stderr
    assert not [name for name in os.listdir(workdir / "checkpoints") if name.startswith(".")]
    assert cli("train", f"--workdir={workdir}", *FLAGS).returncode == 0
    assert observed(str(workdir)) == uninterrupted


def test_two_exports_never_share_a_version_and_a_killed_one_leaves_none(finished, tmp_path):
    """An exporter that finds version 1 taken when it publishes (another took it
    meanwhile) publishes 2; one killed before its rename leaves no numbered folder, and
    its temporary folder goes with the next export."""
    from dsan_tf.saving import export

    run, exports = rundir.RunDirectory(str(finished)), str(tmp_path / "exports")
    nested = []

    def race(point):
        if point == "publish" and not nested:
            nested.append(None)
            nested[0] = export.export_runs([run], exports)  # the other exporter

    previous = atomic.set_fault_hook(race)
    try:
        first = export.export_runs([run], exports)
    finally:
        atomic.set_fault_hook(previous)
    assert (nested[0], first) == (f"{exports}/1", f"{exports}/2")
    for version in ("1", "2"):
        assert {"saved_model.pb", "model.keras", "vocab.json", "MODEL_CARD.md"} <= set(
            os.listdir(os.path.join(exports, version)))
    # A kill (here: a process that died) half-way through an export.
    stale = os.path.join(exports, ".export.999999999.abc.partial")
    os.makedirs(os.path.join(stale, "variables"))
    atomic.set_fault_hook(_kill_in_process("export_savedmodel", 1))
    try:
        with pytest.raises(Killed):
            export.export_runs([run], exports)
    finally:
        atomic.set_fault_hook(previous)
    assert sorted(os.listdir(exports)) == ["1", "2"]


def test_an_unfinished_run_is_exported_only_when_asked_and_evaluated_with_a_note(
        finished, tmp_path):
    """A run stopped before its end (no results.json) or still training (its lock held)
    is refused by export, naming the flag that exports it anyway; evaluate scores its best
    model so far, saying so."""
    import shutil

    from helpers import cli

    workdir = _copy(finished, tmp_path / "run")
    (workdir / "results.json").unlink()
    refused = cli("export", f"--workdir={workdir}", f"--export_dir={tmp_path / 'e'}")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: {workdir} stopped before its end (it has no results.json): its best.keras "
        "is the best model so far, not the run's; export it when the run is done, or give "
        "--unfinished to export it now.")
    assert not (tmp_path / "e").exists() or not os.listdir(tmp_path / "e")
    holder = rundir.RunDirectory(str(workdir))
    holder.lock()
    try:
        evaluated = cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev")
    finally:
        holder.unlock()
    assert evaluated.returncode == 0
    assert f"note: {workdir} is still being trained by process {os.getpid()}" in \
        evaluated.stderr
    done = cli("export", f"--workdir={workdir}", f"--export_dir={tmp_path / 'e'}",
               "--unfinished")
    assert done.returncode == 0 and os.listdir(tmp_path / "e") == ["1"]


def test_no_program_writes_into_another_run(finished, tmp_path):
    """An export inside another run directory, an --output naming a run's record: refused
    while flags are parsed, one sentence each; a run directory with a numbered folder
    put inside it still loads its own best.keras."""
    import shutil

    from helpers import cli

    other = _copy(finished, tmp_path / "other")
    refused = cli("export", f"--workdir={finished}", f"--export_dir={other / 'export'}")
    assert refused.stderr.strip().splitlines()[-1].endswith(
        f"--export_dir is inside the run directory {other}, which is not --workdir; write "
        "it elsewhere.")
    for program, flags in (("evaluate", ["--data=synthetic:word_order/dev"]),
                           ("predict", ["--premise=a b", "--hypothesis=a b"])):
        for record in ("results.json", "history.csv", "config.json"):
            done = cli(program, f"--workdir={finished}", *flags,
                       f"--output={other / record}")
            assert done.returncode == 1 and done.stderr.strip().endswith(
                f"that is the {record} of the run {other}, which only train writes; write "
                "elsewhere."), done.stderr[-500:]
    for flag, target, fault in (("--workdir", tmp_path / "file", "a file, not a directory"),
                                ("--workdir", tmp_path / "file" / "run",
                                 f"{tmp_path / 'file'} is a file, not a directory")):
        (tmp_path / "file").write_text("x")
        done = cli("train", "--config=demo", f"{flag}={target}")
        assert done.stderr.strip() == f"error: flag {flag}={target}: {fault}."
    # Someone put a folder of another model into this run: its own model is loaded.
    (other / "7").mkdir()
    for name in ("vocab.json", "preprocessor.json"):
        shutil.copy(other / name, other / "7" / name)
    (other / "7" / "model.keras").write_bytes(b"not this run's model")
    import dsan_tf

    assert dsan_tf.load(str(other)).classify("a dog ran", "a dog ran")["labels"]


def test_a_damaged_checkpoint_falls_back_to_the_previous_and_cut_views_are_rewritten(
        uninterrupted, tmp_path, monkeypatch, capsys):
    """After epoch 2 is committed, its checkpoint's weights are cut short and history.csv
    is cut mid-row: the resumed run says it falls back to epoch 1's checkpoint (keeping
    the damaged one aside), trains epochs 2 and 3 again, and ends as the run never
    interrupted."""
    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver

    workdir = tmp_path / "run"
    close = _close_event_writers(monkeypatch)
    previous = atomic.set_fault_hook(_kill_in_process("prune", 2))
    try:
        with pytest.raises(Killed):
            driver.train_run(str(workdir), NLITask(_config(), _options()), outputs=_outputs())
    finally:
        atomic.set_fault_hook(previous)
    close()
    weights = workdir / "checkpoints" / "epoch-000002" / "state.weights.h5"
    weights.write_bytes(weights.read_bytes()[:5000])
    history = workdir / "history.csv"
    history.write_text(history.read_text()[:-40])
    capsys.readouterr()
    driver.train_run(str(workdir), NLITask(_config(), _options()), outputs=_outputs())
    printed = capsys.readouterr().out
    assert (f"checkpoint {weights.parent} is damaged (state.weights.h5 is not the file its "
            f"record.json lists); moved to {weights.parent}.damaged, and the run goes on from "
            f"{weights.parent.parent / 'epoch-000001'}, the newest intact checkpoint.") in printed
    assert f"resuming {workdir}: 1 epoch(s) done, training from epoch 2" in printed
    seen = observed(str(workdir))
    seen["checkpoints"].remove("epoch-000002.damaged")  # kept aside, not deleted
    assert seen == uninterrupted


def _with_python_code(path):
    """Replaces the .keras file `path` by a model whose Lambda layer carries a function."""
    import keras

    path.unlink()
    keras.Sequential([keras.Input((2,)), keras.layers.Lambda(lambda x: x * 2)]).save(path)


@pytest.mark.parametrize("damage, fault", [
    (_with_python_code, "holds Python code (a Lambda layer's function), which loading "
                        "refuses"),
    (lambda path: path.write_bytes(path.read_bytes()[:30000]),
     "is not a .keras file (a zip archive) or is cut short"),
    (lambda path: path.write_bytes(path.read_bytes().replace(b"config.json", b"cOnfig.json")),
     "is a damaged .keras file"),
])
def test_a_damaged_best_model_is_one_sentence_naming_it(finished, tmp_path, damage, fault):
    from helpers import cli

    workdir = _copy(finished, tmp_path / "run")
    damage(workdir / "best.keras")
    done = cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"error: {workdir / 'best.keras'} {fault}"), done.stderr[-800:]


def test_a_config_json_of_the_wrong_shape_is_one_sentence_naming_it(finished, tmp_path):
    from helpers import cli

    workdir = _copy(finished, tmp_path / "run")
    config = json.loads((workdir / "config.json").read_text())
    config["training"] = 5
    (workdir / "config.json").write_text(json.dumps(config))
    done = cli("train", f"--workdir={workdir}", *FLAGS)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith(
        f"error: {workdir / 'config.json'} does not hold a run's configuration ("), done.stderr
