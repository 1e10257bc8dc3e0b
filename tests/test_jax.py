"""The programs on JAX: the README's demo trains, evaluates and predicts there (tf.data
feeding a jitted JAX model), exporting is TensorFlow's, and --strategy=mirrored is Keras'
DataParallel over several devices."""

import csv
import importlib.util
import json

import pytest

from helpers import cli, ok

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")


JAX = {"KERAS_BACKEND": "jax"}
DEMO = "--flagfile=experiments/configs/demo.cfg"


def history(workdir):
    with open(workdir / "history.csv") as stream:
        return list(csv.DictReader(stream))


def test_jax_trains_evaluates_predicts_and_tensorflow_exports(tmp_path):
    """The README's demo on JAX (tf.data feeding the jitted JAX model) reaches the demo's
    dev accuracy; evaluate and predict run on JAX; exporting is TensorFlow's: refused on
    JAX in one sentence, done from the JAX run's directory on TensorFlow, where the
    SavedModel gives JAX's probabilities."""
    run = tmp_path / "run"
    stdout = ok(cli("train", DEMO, f"--workdir={run}", env=JAX))
    assert stdout.strip().splitlines()[-1].startswith("dev accuracy 1.0000")
    assert "--jit_compile" in (run / "flags.txt").read_text().splitlines()  # JAX's default
    assert float(history(run)[-1]["val_accuracy"]) == 1.0

    ok(cli("evaluate", f"--workdir={run}", "--data=synthetic:word_order/dev",
           f"--output={tmp_path / 'eval.json'}", env=JAX))
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["sources"]["synthetic:word_order/dev"]["accuracy"] == 1.0

    pair = ("--premise=the dog chased the cat", "--hypothesis=the cat chased the dog")
    on_jax = json.loads(ok(cli("predict", f"--workdir={run}", *pair, env=JAX)))

    refused = cli("export", f"--workdir={run}", f"--export_dir={tmp_path / 'export'}", env=JAX)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "error: experiments.export writes a TensorFlow SavedModel, which needs "
        "KERAS_BACKEND=tensorflow (now jax)")
    assert not (tmp_path / "export").exists()

    ok(cli("export", f"--workdir={run}", f"--export_dir={tmp_path / 'export'}"))
    served = json.loads(ok(cli("predict", f"--workdir={tmp_path / 'export'}", *pair)))
    assert served["label"] == on_jax["label"]
    for name, value in on_jax["probabilities"].items():
        assert served["probabilities"][name] == pytest.approx(value, abs=1e-5)


@pytest.mark.slow
def test_jax_data_parallel_on_two_cpus_matches_one_device(tmp_path):
    """--strategy=mirrored under JAX is keras.distribution.DataParallel: each of two CPU
    devices gets half the global batch, and the losses are those of one device."""
    short = (DEMO, "--epochs=2", "--steps_per_epoch=4", "--dropout=0", "--noshuffle")
    ok(cli("train", *short, f"--workdir={tmp_path / 'one'}", env=JAX))
    two = dict(JAX, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    stdout = ok(cli("train", *short, f"--workdir={tmp_path / 'two'}", "--strategy=mirrored",
                    env=two))
    assert "strategy: mirrored, 2 replica(s), 16 pairs each per step" in stdout
    one, both = history(tmp_path / "one"), history(tmp_path / "two")
    assert len(one) == len(both) == 2
    for a, b in zip(one, both):
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            assert float(b[key]) == pytest.approx(float(a[key]), rel=1e-4), key
