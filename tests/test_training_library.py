"""The training library without flags (state travels by arguments), and what `pip install`
puts into site-packages (the library and its console scripts, no `experiments`)."""

import ast
import configparser
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import dsan_tf
from dsan_tf.common.errors import UsageError
from dsan_tf.core.config import (DataConfig, ExperimentConfig, RunOutputs, RunPolicy,
                                 TrainingConfig)
from dsan_tf.core.task import NLITask
from dsan_tf.training import driver
from dsan_tf.models import registry
from helpers import ROOT


def _config(epochs=2):
    return ExperimentConfig(
        model="cbow", model_config=dsan_tf.model_config("cbow", embedding_dim=16,
                                                        trainable_embeddings=True),
        data=DataConfig(train_data="synthetic:word_order/train",
                        dev_data="synthetic:word_order/dev", embeddings="random",
                        batch_size=32, max_length=32),
        training=TrainingConfig(epochs=epochs, learning_rate=3e-3))


def _policy(**fields):
    """NumPy batches of bounded shapes, the step not compiled (fast to build)."""
    return RunPolicy(**{"jit_compile": False, "bounded_shapes": True, **fields})


def _history(workdir):
    """history.csv's rows without the seconds (which differ between runs)."""
    rows = (workdir / "history.csv").read_text().splitlines()
    header = rows[0].split(",")
    keep = [i for i, name in enumerate(header) if name != "seconds"]
    return [[row.split(",")[i] for i in keep] for row in rows]


def test_a_run_is_its_configuration_not_trained_twice_and_trained_on_with_more_epochs(
        tmp_path):
    """`train_run(workdir, NLITask(config))`: no flag text. config.json records the whole resolved
    configuration; the same configuration finds the finished run; another is refused
    naming each field with both values; more epochs train the finished run on from its
    last epoch, to exactly the history of a run trained that long at once (NumPy batches
    draw the pass of that epoch, and dropout's random states come back with the weights)."""
    workdir = tmp_path / "run"
    outcome = driver.train_run(str(workdir), NLITask(_config(2), _policy()))
    assert outcome.state == "new"
    assert json.loads((workdir / "results.json").read_text()) == outcome.results
    assert outcome.results["epochs"] == 2 and 0 <= outcome.results["dev_accuracy"] <= 1
    shapes = outcome.results["batch_shapes"]  # how the bounded shapes were chosen
    chosen = shapes["chosen"][shapes["chosen"]["by"]]
    assert shapes["training_shapes"] == chosen["shapes"] and shapes["dev_shapes"] <= 3 + 9 * (
        shapes["chosen"]["by"] == "padding_grid")
    assert shapes["padding"] == pytest.approx(chosen["padding"], abs=0.02)
    assert outcome.summary().startswith(f"dev accuracy {outcome.results['dev_accuracy']:.4f}")
    recorded = json.loads((workdir / "config.json").read_text())
    assert ExperimentConfig.from_dict({k: recorded[k] for k in (
        "model", "model_config", "data", "training")}) == _config(2).resolved()
    assert recorded["policy"] == _policy().resolved().to_dict()  # how it ran, decided
    assert recorded["read"]["train"] == {"source": "synthetic:word_order/train",
                                         "kept": 672, "dropped": {}}
    lines = (workdir / "flags.txt").read_text().split()
    assert "--model=cbow" in lines and "--learning_rate=0.003" in lines
    assert {"--nojit_compile", "--bounded_shapes", "--noone_pass"} <= set(lines)
    assert "--embedding_dim=16" in lines and not any("num_heads" in l for l in lines)

    again = driver.train_run(str(workdir), NLITask(_config(2), _policy()))
    assert again.state == "finished" and again.results == outcome.results
    other = _config(2).replace(learning_rate=1e-3, batch_size=16)
    with pytest.raises(UsageError, match=r"batch_size: 32 there, 16 now; "
                                         r"learning_rate: 0.003 there, 0.001 now\)") as refused:
        driver.train_run(str(workdir), NLITask(other, _policy()))
    assert {"learning_rate", "batch_size"} <= set(refused.value.fields)
    # How it runs may change but the batches it draws: those are the run's.
    with pytest.raises(UsageError, match=r"another configuration \(bounded_shapes: True "
                                         r"there, False now\)"):
        driver.train_run(str(workdir), NLITask(_config(2), _policy(bounded_shapes=False)))
    assert driver.train_run(str(workdir), NLITask(_config(2), _policy(
        steps_per_execution=2, compile_ahead=False))).state == "finished"

    longer = driver.train_run(str(workdir), NLITask(_config(3), _policy()))
    assert longer.state == "extend" and longer.results["epochs"] == 3
    at_once = tmp_path / "at_once"
    driver.train_run(str(at_once), NLITask(_config(3), _policy()))
    assert _history(workdir) == _history(at_once)
    assert [row[0] for row in _history(workdir)] == ["epoch", "1", "2", "3"]
    assert json.loads((workdir / "config.json").read_text())["training"]["epochs"] == 3


@pytest.mark.parametrize("schedule_epoch_pairs", [0, 500])
def test_tf_data_batches_resume_in_the_order_of_a_run_from_the_start(tmp_path,
                                                                      schedule_epoch_pairs):
    """A run extended (or resumed) from epoch 1 with `tf.data` batches,
    TensorFlow's default, trains epochs 2 and 3 on the batches a run from the start draws
    there (its seeded reshuffles went on, not again from the start): the same history.
    Also for epochs of `schedule_epoch_pairs`, whose passes start anywhere."""
    def config(epochs):
        return _config(epochs).replace(schedule_epoch_pairs=schedule_epoch_pairs)

    tf_data = _policy(bounded_shapes=False)
    driver.train_run(str(tmp_path / "run"), NLITask(config(1), tf_data))
    assert driver.train_run(str(tmp_path / "run"), NLITask(config(3), tf_data)).state == "extend"
    driver.train_run(str(tmp_path / "at_once"), NLITask(config(3), tf_data))
    assert _history(tmp_path / "run") == _history(tmp_path / "at_once")


@pytest.mark.parametrize("bounded_shapes", [False, True])
def test_a_run_interrupted_mid_epoch_resumes_to_the_uninterrupted_result(
        tmp_path, monkeypatch, bounded_shapes):
    """Ctrl-C in the middle of epoch 2 (step 30 of 63), then the same
    call again, ends with the history and the best weights (their SHA-256) of the run
    that was never interrupted: data order, dropout's random states and the step count
    are restored, with tf.data batches and NumPy batches alike."""
    import keras

    config, policy = _config(3).replace(dropout=0.3), _policy(bounded_shapes=bounded_shapes)

    class CtrlC(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == 30:
                raise KeyboardInterrupt

    make_callbacks = driver.make_callbacks
    monkeypatch.setattr(driver, "make_callbacks", lambda *args, **kwargs: (
        lambda made: ([*made[0], CtrlC()], *made[1:]))(make_callbacks(*args, **kwargs)))
    with pytest.raises(KeyboardInterrupt):
        driver.train_run(str(tmp_path / "run"), NLITask(config, policy))
    assert len(_history(tmp_path / "run")) == 2  # the header and epoch 1
    monkeypatch.setattr(driver, "make_callbacks", make_callbacks)
    resumed = driver.train_run(str(tmp_path / "run"), NLITask(config, policy))
    assert resumed.state == "resume"
    whole = driver.train_run(str(tmp_path / "at_once"), NLITask(config, policy))
    assert _history(tmp_path / "run") == _history(tmp_path / "at_once")
    assert resumed.results["best_weights_sha256"] == whole.results["best_weights_sha256"]
    assert resumed.results["dev_accuracy"] == whole.results["dev_accuracy"]


def test_a_resumed_runs_summaries_past_its_record_are_dropped(tmp_path):
    """The batch summaries an interrupted sitting wrote past the committed step, and the
    epoch summaries past the committed epochs, are dropped from the event files before
    they are trained again; earlier ones stay, and a record cut off by a kill goes."""
    import tensorflow as tf

    from dsan_tf.training.run_state import trim_events

    def steps_of(tag):
        return sorted(event.step for path in sorted(tmp_path.glob("events.out.tfevents.*"))
                      for event in tf.compat.v1.train.summary_iterator(str(path))
                      for value in event.summary.value if value.tag == tag)

    writer = tf.summary.create_file_writer(str(tmp_path))
    # Recorded whatever condition an earlier Keras TensorBoard left open in this process.
    with writer.as_default(), tf.summary.record_if(True):
        for step in range(1, 11):
            tf.summary.scalar("batch_loss", 1.0 / step, step=step)
        for epoch in range(3):
            tf.summary.scalar("epoch_loss", 0.5, step=epoch)
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    with open(path, "ab") as stream:  # a record cut off by a kill
        stream.write(b"\x20\x00\x00\x00\x00\x00\x00\x00abc")
    assert trim_events(str(tmp_path), 2, 6) == 5
    assert steps_of("batch_loss") == [1, 2, 3, 4, 5, 6]
    assert steps_of("epoch_loss") == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir() if "tfevents" not in p.name) == []


def test_the_best_epoch_is_the_first_of_the_highest_dev_accuracy():
    """A later epoch that is worse, or only as good, is not the best; a restored best
    stays until beaten."""
    from dsan_tf.training.callbacks import KeepBest

    keep = KeepBest()
    improved = []
    for epoch, accuracy in enumerate((0.5, 0.7, 0.6, 0.7, float("nan"))):
        keep.on_epoch_end(epoch, {"val_accuracy": accuracy})
        improved.append(keep.improved)
    assert improved == [True, True, False, False, False]
    assert keep.info() == {"epoch": 2, "monitor": "val_accuracy", "value": 0.7}
    keep.restore(0.7, 2)
    keep.on_epoch_end(5, {"val_accuracy": 0.65})
    assert (keep.best, keep.best_epoch, keep.improved) == (0.7, 2, False)


def test_best_keras_holds_the_best_epoch_not_the_last(tmp_path):
    """best.keras and best.json hold the best epoch's model (the weights' SHA-256 that
    results.json records)."""
    workdir = tmp_path / "run"
    outcome = driver.train_run(str(workdir), NLITask(_config(4).replace(learning_rate=0.05), _policy()))
    rows = driver.run_files.read_history(str(workdir / "history.csv"))
    accuracies = [row["val_accuracy"] for row in rows]
    best = accuracies.index(max(accuracies))
    assert json.loads((workdir / "best.json").read_text()) == {
        "epoch": best + 1, "monitor": "val_accuracy", "value": accuracies[best]}
    assert outcome.results["best_epoch"] == best + 1
    import keras

    from dsan_tf.core.rundir import weights_digest
    assert weights_digest(keras.saving.load_model(str(workdir / "best.keras"))) == \
        outcome.results["best_weights_sha256"]


def test_a_finished_run_is_exported_when_asked(tmp_path):
    workdir, exports = tmp_path / "run", tmp_path / "exports"
    driver.train_run(str(workdir), NLITask(_config(1), _policy()))
    outcome = driver.train_run(str(workdir), NLITask(_config(1), _policy()),
                               outputs=RunOutputs(export_dir=str(exports)))
    assert outcome.state == "finished"
    assert (exports / "1" / "saved_model.pb").stat().st_size > 0
    assert (exports / "1" / "MODEL_CARD.md").read_text() == (workdir / "MODEL_CARD.md").read_text()


def test_probe_sentence_is_refused_for_a_family_that_cannot_show_it(tmp_path):
    with pytest.raises(UsageError, match="probe_sentence needs a model that shows a "
                                         "sentence's attention \\(dsan, disan\\), not cbow"):
        driver.train_run(str(tmp_path / "run"), NLITask(_config(), _policy()),
                         outputs=RunOutputs(probe_sentence="A man."))
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_wheel_holds_the_library_and_console_scripts_not_experiments(tmp_path):
    """`pip install` ships dsan_tf only: a top-level `experiments` package in site-packages
    would collide with any other project's, and nothing only the tests read. Every console
    script names a `cli` that exists."""
    # From a copy of what a clean clone holds: setuptools packs whatever an earlier build
    # left in build/lib.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "dsan_tf", source / "dsan_tf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(source)], capture_output=True, text=True, timeout=300)
    if built.returncode and "No module named" in built.stderr:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    wheel = zipfile.ZipFile(next(tmp_path.glob("dsan_tf-*.whl")))
    names = wheel.namelist()
    assert {name.split("/")[0] for name in names if name.endswith(".py")} == {"dsan_tf"}
    assert "dsan_tf/programs/train.py" in names and "dsan_tf/training/driver.py" in names
    # Every module of the library, and none of the tests' (each family's testing.py).
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "dsan_tf").rglob("*.py")}
    test_only = {module for module in modules if module.endswith("/testing.py")}
    assert len(test_only) >= 5 and {name for name in names if name.endswith(".py")} == \
        modules - test_only
    # Every trained preset ships whole, so that it loads by name after `pip install`.
    for name, (folder, _) in registry.trained_presets().items():
        files = {path.relative_to(ROOT).as_posix()
                 for path in pathlib.Path(folder).rglob("*") if path.is_file()}
        assert len(files) >= 8 and files <= set(names), name
    # ... and every named configuration, so that `--config=NAME` works from the wheel.
    for name, config in registry.named_configs().items():
        assert pathlib.Path(config.path).relative_to(ROOT).as_posix() in names, name
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(next(n for n in names
                                             if n.endswith("entry_points.txt"))).decode())
    scripts = dict(entry_points["console_scripts"])
    assert set(scripts) == {f"dsan-{p}" for p in ("train", "evaluate", "ensemble", "embed",
                                                  "export", "predict", "summary", "visualize",
                                                  "encode-setting", "tune")}
    for target in scripts.values():
        module, function = target.split(":")
        assert f"{module.replace('.', '/')}.py" in names
        assert f"def {function}(" in wheel.read(f"{module.replace('.', '/')}.py").decode()


def test_pyproject_declares_the_package_and_agrees_with_requirements(tmp_path):
    """PEP 621 metadata: the version is dsan_tf.__version__ (dsan_tf/version.py), every run-time dependency is
    pinned as requirements.txt pins it, and an editable install (PEP 660) puts dsan_tf on
    the path, not the clone's experiments/ or tests/."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    assert project["tool"]["setuptools"]["dynamic"]["version"]["attr"] == "dsan_tf.version.__version__"
    pinned = {line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()}
    assert set(project["project"]["dependencies"]) <= pinned
    assert set(project["project"]["optional-dependencies"]["test"]) <= pinned
    # The installed distribution is the one pip recorded (PEP 610 direct_url.json); the
    # clone's own dsan_tf.egg-info, which setuptools leaves at the root, records nothing.
    installed = next((found for found in importlib.metadata.distributions(name="dsan_tf")
                      if found.read_text("direct_url.json")), None)
    origin = json.loads(installed.read_text("direct_url.json")) if installed else {}
    url = origin.get("url", "")
    if not (origin.get("dir_info", {}).get("editable") and url.startswith("file://")
            and pathlib.Path(url[len("file://"):]).exists()
            and pathlib.Path(url[len("file://"):]).samefile(ROOT)):
        pytest.skip("dsan_tf is not installed from this clone in editable mode")
    # What the install itself put in site-packages: its .pth files and, for a PEP 660 finder,
    # the module map. (The path as a whole is not asked: an environment may keep a stale
    # easy-install.pth from an old `setup.py develop` of the clone, which is not ours to judge.)
    files = installed.files or []
    pth = [f for f in files if f.name.endswith(".pth")]
    assert pth, "the editable install wrote no .pth file"
    for entry in pth:
        lines = pathlib.Path(entry.locate()).read_text().splitlines()
        paths = [line.strip() for line in lines if line.strip() and not line.startswith("import")]
        assert all(not pathlib.Path(path).exists() or not pathlib.Path(path).samefile(ROOT)
                   for path in paths), f"{entry} puts the clone root on sys.path: {paths}"
    for finder in (f for f in files if f.name.endswith("_finder.py")):
        mapping = re.search(r"MAPPING[^=]*=\s*(\{.*?\})", pathlib.Path(finder.locate()).read_text())
        assert mapping, f"{finder} has no MAPPING"
        assert {name: os.path.realpath(where) for name, where in
                ast.literal_eval(mapping.group(1)).items()} == {
            "dsan_tf": os.path.realpath(ROOT / "dsan_tf")}
    probe = "import dsan_tf, os; print(os.path.realpath(dsan_tf.__file__))"
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                       if k != "PYTHONPATH"})
    assert found.stdout.strip() == os.path.realpath(ROOT / "dsan_tf" / "__init__.py"), found.stderr


def test_an_interrupted_first_epoch_leaves_no_directory(tmp_path, monkeypatch):
    """Ctrl-C before the first epoch ends (history.csv holds its header
    alone) leaves no run directory, as TRAINING.md promises, so the next run, of any
    configuration, starts afresh there."""
    from dsan_tf.training import callbacks

    def interrupt(self, batch, logs=None):
        if batch == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(callbacks.EpochLog, "on_train_batch_end", interrupt, raising=False)
    workdir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        driver.train_run(str(workdir), NLITask(_config(2), _policy()))
    assert not workdir.exists()
    monkeypatch.undo()
    other = _config(1)  # another configuration: not refused
    assert driver.train_run(str(workdir), NLITask(other, _policy())).state == "new"


def test_an_extension_stopped_early_finishes_as_asked_and_no_run_is_shortened(
        tmp_path, monkeypatch, capsys):
    """An extension (2 -> 4 epochs) stopped before its first new epoch,
    then asked for its 2 epochs again, says it finishes (not "training from epoch 3") and
    writes the 2-epoch results; asking a run for fewer epochs than it trained is refused."""
    from dsan_tf.common.errors import UsageError
    from dsan_tf.training import callbacks

    workdir = tmp_path / "run"
    driver.train_run(str(workdir), NLITask(_config(2), _policy()))

    def interrupt(self, batch, logs=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(callbacks.EpochLog, "on_train_batch_end", interrupt, raising=False)
    with pytest.raises(KeyboardInterrupt):
        driver.train_run(str(workdir), NLITask(_config(4), _policy()))
    monkeypatch.undo()
    assert not (workdir / "results.json").exists()  # the extension took the 2-epoch results
    capsys.readouterr()
    outcome = driver.train_run(str(workdir), NLITask(_config(2), _policy()))
    printed = capsys.readouterr().out
    assert f"finishing {workdir}: 2 epoch(s) done, as many as asked; nothing to train" in printed
    assert "training from epoch" not in printed
    assert outcome.results["epochs"] == 2
    assert json.loads((workdir / "results.json").read_text())["epochs"] == 2
    with pytest.raises(UsageError, match=r"holds 2 trained epoch\(s\): epochs=1 asks for "
                                         r"fewer, and a run cannot be made shorter"):
        driver.train_run(str(workdir), NLITask(_config(1), _policy()))


def test_an_export_on_another_backend_is_refused_before_training(tmp_path, monkeypatch):
    """On JAX, `train_run(..., outputs=RunOutputs(export_dir=...))` trained its
    epochs and then died in jax2tf; `serving.export` died the same way. Both now refuse in
    one sentence before any work (the backend is faked: the check is what is tested)."""
    import keras

    from dsan_tf.common.errors import UsageError
    from dsan_tf.data import costs
    from dsan_tf.saving import serving

    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    # The faked backend's device is a CPU: JAX itself may not be installed.
    monkeypatch.setattr(costs, "device_platform", lambda: "cpu")
    workdir = tmp_path / "run"
    with pytest.raises(UsageError) as refused:
        driver.train_run(str(workdir), NLITask(_config(1), _policy()),
                         outputs=RunOutputs(export_dir=str(tmp_path / "e")))
    assert str(refused.value).startswith(
        "export_dir writes a TensorFlow SavedModel, which needs KERAS_BACKEND=tensorflow "
        "(now jax); a model trained on any backend exports from its run directory with ")
    assert refused.value.fields == ("export_dir",)
    assert not workdir.exists()  # nothing trained, nothing written
    with pytest.raises(UsageError, match=r"^dsan_tf.saving.serving.export writes a TensorFlow "):
        serving.export(None, str(tmp_path / "e"))


def test_an_encoded_setting_trains_the_run_its_text_trains_stopped_or_not(demo, tmp_path):
    """`dsan-train --setting` of the demo's encoded setting is the demo's run from its text:
    the same batches, each epoch's metrics, best weights (their SHA-256) and config.json's
    record of what reading found; best.keras reads text as the text run's does. Here it is
    also stopped by --stop_after_epochs=3 (status 0, no results.json, one line saying so)
    and trained on by the same command, which ends as the uninterrupted run."""
    from helpers import cli, ok

    trained, _ = demo
    setting = tmp_path / "demo.npz"
    ok(cli("encode_setting", "--config=demo", f"--output={setting}"))
    workdir = tmp_path / "run"
    command = ("train", f"--setting={setting}", f"--workdir={workdir}", "--epochs=4",
               "--stop_after_epochs=3")
    stdout = ok(cli(*command))
    assert "encoded setting: train 672 pairs, dev 168 pairs, 16 ids" in stdout
    assert stdout.strip().splitlines()[-1] == (
        f"stopped as asked after epoch 3: {workdir} keeps its epochs; the same command "
        "trains on.")
    assert len(_history(workdir)) == 1 + 3 and not (workdir / "results.json").exists()
    stdout = ok(cli(*command))
    assert f"resuming {workdir}: 3 epoch(s) done, training from epoch 4" in stdout
    assert _history(workdir) == _history(trained)
    results = [json.loads((folder / "results.json").read_text())
               for folder in (workdir, trained)]
    assert results[0]["best_weights_sha256"] == results[1]["best_weights_sha256"]
    records = [json.loads((folder / "config.json").read_text())
               for folder in (workdir, trained)]
    for key in ("data", "model_config", "read", "tokens", "embeddings", "vocab_size",
                "parameters", "padding_fraction"):
        assert records[0][key] == records[1][key], key
    # Its ids are of its data settings: one that would change them is refused; how
    # batches are drawn may change.
    refused = cli("train", f"--setting={setting}", f"--workdir={tmp_path / 'other'}",
                  "--max_length=5")
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        "error: --setting holds ids encoded with --max_length=256, not 5: a run of it keeps "
        "its data settings.")
    both = cli("train", f"--setting={setting}", "--config=demo", f"--workdir={tmp_path}")
    assert both.stderr.strip().splitlines()[-1] == (
        "error: give --config or --setting, not both: an encoded setting holds its "
        "configuration.")
    pairs = (["a dog runs", "the cat"], ["an animal moves", "a cat"])
    np.testing.assert_allclose(
        dsan_tf.load(str(workdir / "best.keras")).predict(pairs, verbose=0),
        dsan_tf.load(str(trained / "best.keras")).predict(pairs, verbose=0))



def test_records_of_older_versions_are_read_with_what_ran():
    """config.json of a run before the policy had its own part (the shipped preset's run,
    its step choices in "data" and "training", one of them since retired) and a policy
    part holding choices of an older version: the configuration and policy come back,
    what no run makes now passed over, so such a run resumes or is compared."""
    from dsan_tf.core import rundir

    record = json.loads((ROOT / "records/runs/preset_dsan_snli25k_glove50/config.json").read_text())
    assert "pad_to_bucket" in record["data"]  # retired: the test's premise
    config = rundir.recorded_config(record)
    assert (config.model, config.data.batch_size, config.training.epochs) == ("dsan", 64, 30)
    policy = RunPolicy.from_record(record)
    assert (policy.jit_compile, policy.bounded_shapes, policy.shape_costs) == (False, False,
                                                                               "device")
    older = {**record, "policy": {**RunPolicy(jit_compile=True).to_dict(), "strategy":
                                  "default", "tpu": "", "logical_cpus": 0,
                                  "pad_to_bucket": False}}
    assert RunPolicy.from_record(older) == RunPolicy(jit_compile=True)


def test_dev_subset_scores_the_same_pairs_for_every_seed_and_is_recorded(tmp_path, capsys):
    """`dev_subset=N`: the run's dev accuracy is its best model's over N pairs, the same N
    whatever the run's seed, said in the run's output and recorded in config.json and
    flags.txt."""
    from dsan_tf import data
    from dsan_tf.core.task import NLITask
    from dsan_tf.models import registry

    examples, _ = data.read_examples("synthetic:word_order/dev")
    for seed in (0, 1):
        config = _config(1).replace(dev_subset=50, seed=seed)
        workdir = tmp_path / f"seed{seed}"
        outcome = driver.train_run(str(workdir), NLITask(config, _policy()))
        assert "dev_data: a random subset of 50 of the 168 pairs" in capsys.readouterr().out
        assert json.loads((workdir / "config.json").read_text())["data"]["dev_subset"] == 50
        assert "--dev_subset=50" in (workdir / "flags.txt").read_text().split()
        chosen = NLITask(config, log=lambda _: None).subset(examples, "dev")
        if seed == 0:
            first = chosen
        assert len(chosen) == 50 and chosen == first
        model = registry.load_model(str(workdir / "best.keras"))
        predicted = np.argmax(model.predict(([e.premise for e in chosen],
                                             [e.hypothesis for e in chosen])), axis=-1)
        right = np.mean(predicted == np.array([e.label for e in chosen]))
        assert outcome.results["dev_accuracy"] == pytest.approx(right, abs=1e-6)


@pytest.mark.parametrize("name", registry.PACKAGES)
@pytest.mark.parametrize("embeddings", ["random", "vectors.txt"])
def test_the_model_a_task_builds_has_the_word_embedding_config_json_records(name, embeddings):
    """config.json records `ExperimentConfig.resolved()` (an unset trainable_embeddings:
    trained with random vectors, frozen with given ones); the task builds the model from
    the unresolved configuration the caller made, with what the driver hands it (word
    vectors for a file, none for random; the vocabulary, from which the Gaussian
    Transformer makes its character features, which are no word vectors). Both must say
    the same."""
    from dsan_tf import data
    from families import small

    config = ExperimentConfig(
        model=name, model_config=dsan_tf.model_config(name, **{**small(name),
                                                              "embedding_dim": 8}),
        data=DataConfig(embeddings=embeddings))
    task = NLITask(config, log=lambda _: None)
    vocabulary = data.Vocabulary(["a", "b", "c"])
    vectors = np.ones((len(vocabulary), 8), "float32") if embeddings != "random" else None
    model = task.build_model(len(vocabulary), vectors, vocabulary)
    recorded = config.resolved().model_config.trainable_embeddings
    if config.model_config.trainable_embeddings is None:  # AF-DMN's paper sets it
        assert recorded is (embeddings == "random")
    assert model.backbone.token_embedding.trainable is recorded
    assert model.backbone.get_config()["trainable_embeddings"] is recorded


def test_train_run_refuses_a_configuration_where_it_takes_a_task(tmp_path):
    """`train_run(workdir, config, policy)`, as it took a configuration before, must not
    read the policy as `overwrite` (it would replace the run): the arguments after the task
    are keywords, and a configuration in the task's place is one sentence."""
    with pytest.raises(TypeError, match="positional"):
        driver.train_run(str(tmp_path / "run"), _config(), _policy())
    with pytest.raises(TypeError, match="train_run takes the NLITask to train .* got a "
                                       "ExperimentConfig"):
        driver.train_run(str(tmp_path / "run"), _config())
    assert not (tmp_path / "run").exists()
