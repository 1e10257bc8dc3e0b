"""The training library without flags (state travels by arguments), and what `pip install`
puts into site-packages (the library and its console scripts, no `experiments`)."""

import configparser
import json
import subprocess
import sys
import zipfile

import pytest

import dsan_tf
from dsan_tf.config import DataConfig, ExperimentConfig, RunOptions, TrainingConfig
from dsan_tf.errors import UsageError
from dsan_tf.training import steps
from helpers import ROOT


def _config(epochs=2):
    return ExperimentConfig(
        model="cbow", model_config=dsan_tf.model_config("cbow", embedding_dim=16,
                                                        trainable_embeddings=True),
        data=DataConfig(train_data="synthetic:word_order/train",
                        dev_data="synthetic:word_order/dev", embeddings="random",
                        batch_size=32, max_length=32),
        training=TrainingConfig(epochs=epochs, learning_rate=3e-3, jit_compile=False))


def test_a_run_trains_from_configuration_objects_and_is_not_trained_twice(tmp_path):
    """`train_run(workdir, ExperimentConfig, RunOptions, flags.txt lines)`: what the
    program does after parsing flags, callable without absl. Its results are results.json's;
    the same call finds the finished run; other lines are refused, naming the flag."""
    workdir = tmp_path / "run"
    lines = ["--model=cbow", "--epochs=2"]
    outcome = steps.train_run(str(workdir), _config(), RunOptions(), lines)
    assert outcome.state == "new"
    assert json.loads((workdir / "results.json").read_text()) == outcome.results
    assert outcome.results["epochs"] == 2 and 0 <= outcome.results["dev_accuracy"] <= 1
    assert outcome.summary().startswith(f"dev accuracy {outcome.results['dev_accuracy']:.4f}")
    assert (workdir / "flags.txt").read_text().split() == lines

    again = steps.train_run(str(workdir), _config(), RunOptions(), lines)
    assert again.state == "finished" and again.results == outcome.results
    with pytest.raises(UsageError, match="--epochs: 2 there, 3 now"):
        steps.train_run(str(workdir), _config(3), RunOptions(), ["--model=cbow", "--epochs=3"])


def test_probe_sentence_is_refused_for_a_family_that_cannot_show_it(tmp_path):
    with pytest.raises(UsageError, match="--probe_sentence needs --model=dsan"):
        steps.train_run(str(tmp_path / "run"), _config(), RunOptions(probe_sentence="A man."),
                        ["--model=cbow"])
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_wheel_holds_the_library_and_console_scripts_not_experiments(tmp_path):
    """`pip install` ships dsan_tf only: a top-level `experiments` package in site-packages
    would collide with any other project's. Every console script names a `cli` that exists."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    if built.returncode and "No module named" in built.stderr:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    wheel = zipfile.ZipFile(next(tmp_path.glob("dsan_tf-*.whl")))
    names = wheel.namelist()
    assert {name.split("/")[0] for name in names if name.endswith(".py")} == {"dsan_tf"}
    assert "dsan_tf/programs/train.py" in names and "dsan_tf/training/steps.py" in names
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(next(n for n in names
                                             if n.endswith("entry_points.txt"))).decode())
    scripts = dict(entry_points["console_scripts"])
    assert set(scripts) == {f"dsan-{p}" for p in ("train", "evaluate", "ensemble", "embed",
                                                  "export", "predict", "summary", "visualize",
                                                  "encode-setting", "train-encoded")}
    for target in scripts.values():
        module, function = target.split(":")
        assert f"{module.replace('.', '/')}.py" in names
        assert f"def {function}(" in wheel.read(f"{module.replace('.', '/')}.py").decode()
