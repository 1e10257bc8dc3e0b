"""Damage to what a run has committed costs at most the damaged checkpoint: every file of a
finished or an unfinished run is cut, garbled, replaced by JSON of the wrong type or
removed, and the next `dsan-train` of the run (the same command) heals it from the record,
saying so in a line naming the file, and ends as the run never damaged; where nothing
intact is left, one sentence names the files and nothing is touched. Outputs never land
in a run, a SavedModel is not run unless trusted, a full disk is one sentence."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from dsan_tf.core import rundir
from helpers import ENV, ROOT, cli
# The run never interrupted and what a user reads of it: crash safety's fixtures.
from test_crash_safety import (FLAGS, _config, _copy, _options, _outputs, finished,  # noqa: F401
                               observed, uninterrupted)

pytestmark = pytest.mark.tensorflow

NEWEST = "checkpoints/epoch-000003"


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory):
    """The same run stopped after 2 of its 3 epochs (`--stop_after_epochs`)."""
    workdir = tmp_path_factory.mktemp("half") / "run"
    assert cli("train", f"--workdir={workdir}", *FLAGS, "--stop_after_epochs=2").returncode == 0
    return workdir


def _events(workdir, folder="validation"):
    (path,) = (pathlib.Path(workdir) / "tensorboard" / folder).glob("*tfevents*")
    return path


def cut(path):
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])


def garble(path):
    content = bytearray(path.read_bytes())
    middle = len(content) // 2
    span = min(400, len(content) // 4)
    content[middle:middle + span] = bytes((b ^ 0x5A) for b in content[middle:middle + span])
    path.write_bytes(bytes(content))


def wrong_type(path):
    path.write_text("[1, 2, 3]")


def missing(path):
    path.unlink()


DAMAGES = {"cut": cut, "garbled": garble, "wrong type": wrong_type, "missing": missing}
VIEWS = ("best.keras", "history.csv", "best.json", "results.json", "MODEL_CARD.md",
         "vocab.json", "preprocessor.json")
RECORD_FILES = tuple(f"{NEWEST}/{name}" for name in
                     ("best.keras", "record.json", "state.weights.h5", "seeds.npz"))
JSON = ("best.json", "results.json", "vocab.json", "preprocessor.json",
        f"{NEWEST}/record.json")


def _cases(files):
    return [(name, damage) for name in files for damage in DAMAGES
            if damage != "wrong type" or name in JSON]


def _damage_and_train(workdir, name, damage):
    target = workdir / name if name != "events" else _events(workdir)
    DAMAGES[damage](target)
    done = cli("train", f"--workdir={workdir}", *FLAGS)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "Traceback" not in done.stderr
    return target, done.stdout


def _same_as_uninterrupted(workdir, uninterrupted):
    seen = observed(str(workdir))
    seen["checkpoints"] = [name for name in seen["checkpoints"]
                           if not name.endswith(".damaged")]
    assert seen == uninterrupted


# The default suite: each file once; the slow subset plants every damage in each.
QUICK = [("best.keras", "garbled"), ("history.csv", "cut"), ("best.json", "wrong type"),
         ("results.json", "cut"), ("MODEL_CARD.md", "missing"), ("vocab.json", "cut"),
         ("events", "garbled"), (f"{NEWEST}/record.json", "cut"),
         (f"{NEWEST}/best.keras", "garbled")]


def _check_finished(finished, uninterrupted, tmp_path, name, damage):
    workdir = _copy(finished, tmp_path / "run")
    target, printed = _damage_and_train(workdir, name, damage)
    # Said in a line naming the file (a checkpoint's: its folder).
    named = str(target.parent) if NEWEST in name else str(target)
    assert named in printed, printed[-2000:]
    _same_as_uninterrupted(workdir, uninterrupted)
    assert cli("export", f"--workdir={workdir}",
               f"--export_dir={tmp_path / 'export'}").returncode == 0


@pytest.mark.parametrize("name, damage", QUICK)
def test_a_damaged_file_of_a_finished_run_is_healed_by_the_next_train(
        finished, uninterrupted, tmp_path, name, damage):
    _check_finished(finished, uninterrupted, tmp_path, name, damage)


@pytest.mark.slow
@pytest.mark.parametrize("name, damage", [case for case in _cases(
    (*VIEWS, *RECORD_FILES)) if case not in QUICK])
def test_every_damage_of_a_finished_run_is_healed(finished, uninterrupted, tmp_path, name,
                                                  damage):
    _check_finished(finished, uninterrupted, tmp_path, name, damage)


@pytest.mark.slow
@pytest.mark.parametrize("name, damage", _cases(
    ("best.keras", "history.csv", "best.json", "vocab.json", "preprocessor.json",
     "checkpoints/epoch-000002/record.json", "checkpoints/epoch-000002/best.keras",
     "checkpoints/epoch-000002/state.weights.h5")))
def test_every_damage_of_an_unfinished_run_costs_at_most_its_checkpoint(
        unfinished, uninterrupted, tmp_path, name, damage):
    workdir = _copy(unfinished, tmp_path / "run")
    target, printed = _damage_and_train(workdir, name, damage)
    if damage != "missing" or name in ("best.keras", "history.csv", "best.json"):
        # Said in a line naming the file (a checkpoint's: its folder); a missing vocabulary
        # or preprocessor file is made as at the run's start.
        named = str(target.parent) if "checkpoints/" in name else str(target)
        assert named in printed, printed[-2000:]
    _same_as_uninterrupted(workdir, uninterrupted)


def test_checkpoint_files_share_no_bytes_with_the_files_users_see(finished):
    """Each checkpoint's files are its own: no hard link to best.keras (damage to it in
    place once damaged every checkpoint at once)."""
    seen = {}
    for folder, _, names in os.walk(finished):
        for name in names:
            path = os.path.join(folder, name)
            stat = os.stat(path)
            assert stat.st_nlink == 1, path
            assert (stat.st_dev, stat.st_ino) not in seen, (path, seen.get(stat.st_ino))
            seen[(stat.st_dev, stat.st_ino)] = path


def test_best_keras_damaged_in_place_of_an_unfinished_run_loses_no_epoch(
        unfinished, uninterrupted, tmp_path):
    """The finding: best.keras garbled in place made every checkpoint "damaged", and the
    run discarded its committed epochs and trained from epoch 1."""
    workdir = _copy(unfinished, tmp_path / "run")
    garble(workdir / "best.keras")
    done = cli("train", f"--workdir={workdir}", *FLAGS)
    assert done.returncode == 0
    assert f"resuming {workdir}: 2 epoch(s) done, training from epoch 3" in done.stdout
    assert f"{workdir / 'best.keras'} is not the best model its record lists" in done.stdout
    _same_as_uninterrupted(workdir, uninterrupted)


def _snapshot(workdir):
    return {os.path.relpath(os.path.join(folder, name), workdir):
            pathlib.Path(folder, name).read_bytes()
            for folder, _, names in os.walk(workdir) for name in names if name != "lock"}


def test_no_intact_checkpoint_is_one_sentence_that_touches_nothing(unfinished, tmp_path):
    workdir = _copy(unfinished, tmp_path / "run")
    for epochs in (1, 2):
        cut(workdir / f"checkpoints/epoch-00000{epochs}/record.json")
    before = _snapshot(workdir)
    done = cli("train", f"--workdir={workdir}", *FLAGS)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: no checkpoint of {workdir} is intact (")
    for epochs in (1, 2):
        assert f"{workdir}/checkpoints/epoch-00000{epochs}: " in line
    assert line.endswith("so its committed epochs cannot be resumed and nothing was "
                         "changed; put the checkpoints back from a copy, or --overwrite to "
                         "train afresh.")
    assert _snapshot(workdir) == before


def test_a_finished_run_whose_newest_checkpoint_is_cut_is_extended_and_exported(
        finished, uninterrupted, tmp_path):
    workdir = _copy(finished, tmp_path / "run")
    cut(workdir / NEWEST / "record.json")
    exported = cli("export", f"--workdir={workdir}", f"--export_dir={tmp_path / 'e'}")
    assert exported.returncode == 0, exported.stderr[-1000:]
    assert (tmp_path / "e/1/model.keras").read_bytes() == (workdir / "best.keras").read_bytes()
    longer = [flag if not flag.startswith("--epochs=") else "--epochs=4" for flag in FLAGS]
    done = cli("train", f"--workdir={workdir}", *longer)
    assert done.returncode == 0, done.stderr[-1000:]
    assert f"extending {workdir}: 2 epoch(s) done, training epochs 3 to 4" in done.stdout
    history = [{k: v for k, v in row.items() if k != "seconds"}
               for row in rundir.read_history(str(workdir / "history.csv"))]
    assert len(history) == 4 and history[:3] == uninterrupted["history"]


def test_a_garbled_event_record_keeps_every_point_after_it(finished, uninterrupted, tmp_path):
    """The finding: one garbled record made every later TensorBoard point vanish, rc 0, no
    word. Now the records after it are kept and the epoch points it held are written again
    from the record, said in one line."""
    from dsan_tf.training import run_state

    workdir = _copy(finished, tmp_path / "run")
    events = _events(workdir, "train")
    records, damaged, _ = run_state._read_records(str(events))
    assert not damaged and len(records) > 10
    garble(events)
    said = []
    run_state.trim_events(str(workdir / "tensorboard"), 3, 10 ** 9,
                          rundir.read_history(str(workdir / "history.csv")), say=said.append)
    (line,) = said
    assert line.startswith(f"{events} had damaged records (bytes ")
    kept, damaged, cut_short = run_state._read_records(str(events))
    assert not damaged and not cut_short
    # At most the records the 400 garbled bytes hit are lost, and no epoch point.
    assert len(kept) >= len(records) - 400 // 30
    seen = observed(str(workdir))
    epoch = [point for point in seen["tensorboard"] if point[1].startswith("epoch_")]
    assert epoch == [point for point in uninterrupted["tensorboard"]
                     if point[1].startswith("epoch_")]


def test_leftovers_of_a_kill_go_and_views_rewritten_are_said(finished, tmp_path):
    workdir = _copy(finished, tmp_path / "run")
    for name in (".results.json.123.partial", ".history.csv.456.partial"):
        (workdir / name).write_text("half")
    (workdir / "history.csv").write_text("epoch,accuracy\n1,0.5\n2,0.")
    done = cli("train", f"--workdir={workdir}", *FLAGS)
    assert done.returncode == 0
    assert f"{workdir / 'history.csv'} did not match the record (damaged or edited); " \
           f"written again from {workdir / NEWEST}." in done.stdout
    assert not [name for name in os.listdir(workdir) if name.endswith(".partial")]


@pytest.mark.parametrize("where", ["checkpoints/epoch-000003/record.json",
                                   "tensorboard/evaluation.json", "checkpoints/new.json",
                                   "results.json"])
def test_outputs_never_land_inside_a_run(finished, tmp_path, where):
    workdir = _copy(finished, tmp_path / "run")
    before = _snapshot(workdir)
    for program, flags in (("evaluate", ["--data=synthetic:word_order/dev"]),
                           ("predict", ["--premise=a b", "--hypothesis=a b"])):
        done = cli(program, f"--workdir={workdir}", *flags, f"--output={workdir / where}")
        assert done.returncode == 1 and "Traceback" not in done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"error: flag --output={workdir / where}: that is ")
        assert "only train writes; write elsewhere." in line
    figures = cli("visualize", f"--workdir={workdir}", f"--output_dir={workdir}/figures")
    assert figures.returncode == 1 and "inside the run directory" in figures.stderr
    assert _snapshot(workdir) == before


def test_an_output_onto_the_input_is_refused(finished, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"sentence1": "a b", "sentence2": "a b"}) + "\n")
    done = cli("predict", f"--workdir={finished}", f"--input={pairs}", f"--output={pairs}")
    assert done.returncode == 1
    assert done.stderr.strip() == (f"error: --output={pairs} is the file --input reads; "
                                   "write the output elsewhere.")
    assert json.loads(pairs.read_text())["sentence1"] == "a b"


def _hostile_savedmodel(folder, target):
    """A SavedModel whose loading writes `target` (a resource initializer's file write)."""
    import tensorflow as tf

    class Hostile(tf.saved_model.experimental.TrackableResource):
        def _create_resource(self):
            return tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[], shared_name="h")

        def _initialize(self):
            tf.io.write_file(str(target), "written while loading")

    module = tf.Module()
    module.resource = Hostile()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.string)])
    def serve(premise, hypothesis):
        return {"probabilities": tf.zeros([tf.shape(premise)[0], 3])}

    module.serve = serve
    tf.saved_model.save(module, str(folder), signatures={"serving_default": serve})


def test_a_foreign_savedmodel_runs_nothing_unless_trusted(tmp_path):
    import dsan_tf

    folder, target = tmp_path / "export" / "1", tmp_path / "written"
    _hostile_savedmodel(folder, target)
    with pytest.raises(ValueError, match="trust_savedmodel=True"):
        dsan_tf.load(str(tmp_path / "export"))
    done = cli("predict", f"--workdir={tmp_path / 'export'}", "--premise=a", "--hypothesis=b")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "--trust_savedmodel" in done.stderr.strip().splitlines()[-1]
    assert not target.exists()
    dsan_tf.load(str(tmp_path / "export"), trust_savedmodel=True)  # named trusted: it runs
    assert target.exists()


def test_a_damaged_best_model_says_so_not_that_there_is_none(finished, tmp_path):
    workdir = _copy(finished, tmp_path / "run")
    cut(workdir / "best.keras")
    done = cli("predict", f"--workdir={workdir}", "--premise=a b", "--hypothesis=a b")
    assert done.returncode == 1
    assert f"{workdir / 'best.keras'} is not a .keras file" in done.stderr
    assert "nor a SavedModel" not in done.stderr


def test_a_hostile_keras_configuration_is_one_sentence(finished, tmp_path):
    import zipfile

    workdir = _copy(finished, tmp_path / "run")
    best = workdir / "best.keras"
    with zipfile.ZipFile(best) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(files["config.json"])
    config["class_name"] = config["registered_name"] = "system"
    config["module"] = "os"
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(best, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    done = cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"error: {best} is not a model this project can read (")


def test_the_lock_names_the_process_that_holds_it_not_the_files_text(tmp_path):
    workdir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom dsan_tf.core import rundir\n"
         f"run = rundir.RunDirectory({str(workdir)!r})\nrun.lock()\n"
         f"open({str(workdir / 'lock')!r}, 'w').write('process 1 (a lie)')\n"
         "print('locked', flush=True)\ntime.sleep(60)"],
        cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert rundir.RunDirectory(str(workdir)).holder().startswith(
            f"process {holder.pid} (")
    finally:
        holder.kill()
        holder.wait()


def test_an_export_is_readable_as_its_folder_and_the_card_quotes_its_commands(
        finished, tmp_path):
    workdir = _copy(finished, tmp_path / "a run")
    exports = tmp_path / "exports"
    old = os.umask(0o022)
    try:
        assert cli("export", f"--workdir={workdir}", f"--export_dir={exports}").returncode == 0
    finally:
        os.umask(old)
    assert oct((exports / "1").stat().st_mode & 0o777) == oct(0o755)
    card = (exports / "1" / "MODEL_CARD.md").read_text()
    assert f"'--workdir={workdir}'`" in card


def test_interrupted_after_its_last_epoch_says_it_finishes(finished, tmp_path):
    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver

    workdir = _copy(finished, tmp_path / "run")
    (workdir / "results.json").unlink()
    said = driver.interrupted_message(str(workdir), "dsan-train ...")
    assert said == (f"all 3 epoch(s) of {workdir} are kept; `dsan-train ...` evaluates its "
                    "best model and finishes it.")


def _tmpfs(path, size):
    path.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True)
    if made.returncode:
        pytest.skip("a small tmpfs (a full disk) needs mount, as root")


@pytest.mark.slow
def test_a_real_full_disk_is_one_sentence_and_the_run_resumes(uninterrupted, tmp_path):
    """A real full disk (a small tmpfs filled up) during training: one sentence, no
    traceback, no segmentation fault, no temporary file; with space freed the same
    command ends as the run never stopped."""
    disk = tmp_path / "disk"
    _tmpfs(disk, "3m")
    try:
        filler = disk / "filler"
        workdir = disk / "run"
        # Leave room for the first epoch's files, not for the second's.
        filler.write_bytes(b"\0" * (1700 * 1024))
        first = subprocess.run([sys.executable, "-m", "dsan_tf.programs.train",
                                f"--workdir={workdir}", *FLAGS], cwd=ROOT, env=ENV,
                               capture_output=True, text=True, timeout=600)
        assert first.returncode == 1, (first.returncode, first.stderr[-2000:])
        assert "Traceback" not in first.stderr
        (line,) = first.stderr.strip().splitlines()[-1:]
        assert line.startswith("error: could not write ") and "No space left" in line
        leftovers = [os.path.join(folder, name) for folder, _, names in os.walk(workdir)
                     for name in names if ".partial" in name]
        assert not leftovers
        filler.unlink()
        again = subprocess.run([sys.executable, "-m", "dsan_tf.programs.train",
                                f"--workdir={workdir}", *FLAGS], cwd=ROOT, env=ENV,
                               capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-2000:]
        assert observed(str(workdir)) == uninterrupted
    finally:
        subprocess.run(["umount", str(disk)])


def test_an_export_never_copies_a_damaged_preprocessor_file(finished, tmp_path):
    """The finding: dsan-export copied a cut vocab.json and a preprocessor.json of the
    wrong type into the export. The export holds the model's own, says so, and writes the
    run's again."""
    workdir = _copy(finished, tmp_path / "run")
    vocabulary = (workdir / "vocab.json").read_bytes()
    cut(workdir / "vocab.json")
    wrong_type(workdir / "preprocessor.json")
    done = cli("export", f"--workdir={workdir}", f"--export_dir={tmp_path / 'e'}")
    assert done.returncode == 0, done.stderr[-1000:]
    assert f"{workdir / 'vocab.json'} is not the one best.keras holds" in done.stdout
    assert (tmp_path / "e/1/vocab.json").read_bytes() == vocabulary
    assert (workdir / "vocab.json").read_bytes() == vocabulary
    assert json.loads((tmp_path / "e/1/preprocessor.json").read_text())["max_length"] == 32


def test_a_hostile_preset_is_one_sentence(tmp_path):
    import shutil

    import dsan_tf
    from dsan_tf.models import preset

    folder = tmp_path / "preset"
    shutil.copytree(preset.locate("dsan_snli25k_glove50"), folder)
    config = json.loads((folder / "config.json").read_text())
    config["class_name"] = config["registered_name"] = "system"
    config["module"] = "os"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=rf"^{folder} is not a preset this project can read "
                                         r"\(TypeError: Could not locate class 'system'"):
        dsan_tf.load(str(folder))


class Killed(BaseException):
    """Stands for SIGKILL in this process, where a view is being written again."""


@pytest.mark.parametrize("module, writer", [("dsan_tf.common.atomic", "copy_file"),
                                            ("dsan_tf.core.rundir", "write_history"),
                                            ("dsan_tf.saving.model_card", "write")])
def test_a_kill_while_views_are_healed_is_healed_by_the_next_run(
        finished, uninterrupted, tmp_path, monkeypatch, module, writer):
    """The repair's own writes (best.keras copied from its checkpoint, history.csv and the
    card written again) killed half-way: the next run repairs what is left."""
    import importlib

    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver

    workdir = _copy(finished, tmp_path / "run")
    garble(workdir / "best.keras")
    cut(workdir / "history.csv")
    missing(workdir / "MODEL_CARD.md")
    target = importlib.import_module(module)

    def killed(*args, **kwargs):
        raise Killed(writer)

    monkeypatch.setattr(target, writer, killed)
    with pytest.raises(Killed):
        driver.train_run(str(workdir), NLITask(_config(), _options()), outputs=_outputs())
    monkeypatch.undo()
    driver.train_run(str(workdir), NLITask(_config(), _options()), outputs=_outputs())
    _same_as_uninterrupted(workdir, uninterrupted)
    assert (workdir / "MODEL_CARD.md").read_text().startswith("# Model card: cbow")
