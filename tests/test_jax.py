"""The programs on JAX: the README's demo trains, evaluates and predicts there (tf.data
feeding a jitted JAX model), and exporting is TensorFlow's."""

import csv
import json
import re

import pytest

from helpers import cli, cli_in_child, ok

pytestmark = pytest.mark.jax


JAX = {"KERAS_BACKEND": "jax"}
DEMO = "--config=demo"


def history(workdir):
    with open(workdir / "history.csv") as stream:
        return list(csv.DictReader(stream))


@pytest.mark.slow  # the README's demo whole, on JAX: 50 s of CPU
def test_jax_trains_evaluates_predicts_and_tensorflow_exports(tmp_path):
    """The README's demo on JAX (tf.data feeding the jitted JAX model) reaches the demo's
    dev accuracy; evaluate and predict run on JAX; exporting is TensorFlow's: refused on
    JAX in one sentence, done from the JAX run's directory on TensorFlow, where the
    SavedModel gives JAX's probabilities."""
    run = tmp_path / "run"
    pair = ("--premise=the dog chased the cat", "--hypothesis=the cat chased the dog")
    trained, evaluated, predicted, refused = cli_in_child([  # one JAX process for the four
        ("train", [DEMO, f"--workdir={run}"]),
        ("evaluate", [f"--workdir={run}", "--data=synthetic:word_order/dev",
                      f"--output={tmp_path / 'eval.json'}"]),
        ("predict", [f"--workdir={run}", *pair]),
        ("export", [f"--workdir={run}", f"--export_dir={tmp_path / 'export'}"])], env=JAX)
    stdout = ok(trained)
    assert stdout.strip().splitlines()[-1].startswith("dev accuracy 1.0000")
    assert "--jit_compile" in (run / "flags.txt").read_text().splitlines()  # JAX's default
    assert float(history(run)[-1]["val_accuracy"]) == 1.0

    ok(evaluated)
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["sources"]["synthetic:word_order/dev"]["accuracy"] == 1.0

    on_jax = json.loads(ok(predicted))

    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "error: dsan-export writes a TensorFlow SavedModel, which needs "
        "KERAS_BACKEND=tensorflow (now jax)")
    assert not (tmp_path / "export").exists()

    ok(cli("export", f"--workdir={run}", f"--export_dir={tmp_path / 'export'}"))
    served = json.loads(ok(cli("predict", f"--workdir={tmp_path / 'export'}", *pair)))
    assert served["label"] == on_jax["label"]
    for name, value in on_jax["probabilities"].items():
        assert served["probabilities"][name] == pytest.approx(value, abs=1e-5)


def probe_shapes(*args):
    """tests/jax_shapes_probe.py under JAX: its JSON line."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "tests/jax_shapes_probe.py", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_few_hundred_steps_of_snli_lengths_use_at_most_twelve_shapes():
    """The default grid (4 premise x 3 hypothesis lengths) over 300 steps of SNLI-like
    lengths: at most 12 training shapes, and JAX's CPU default (per-length programs)
    compiles each sentence length's programs once, the head's once, none during fit."""
    result = probe_shapes(4800)
    assert result["train_shapes"] <= 12 and result["dev_shapes"] <= 12
    train, dev = result["lengths"]["train"], result["lengths"]["dev"]
    assert len(train) <= 7
    assert result["ahead"] == {"encode": len(train), "backward": len(train),
                               "head_gradient": 1, "update": 1, "inference": len(dev),
                               "evaluation": 1}
    assert result["during_fit"] == {}
    assert result["steps"] == 300


def test_an_encoded_setting_trains_on_jax_without_tensorflow_into_a_run_directory(tmp_path):
    """The GPU road: encode_setting writes the demo's ids, vectors and configuration (with
    TensorFlow's tokenizer); `dsan-train --setting` trains them on JAX with TensorFlow
    unimportable, in bounded shapes compiled ahead, and writes the run directory a run
    from the text writes (config.json, history.csv, best.keras, results.json; no
    TensorBoard, which TensorFlow writes), which a higher --epochs trains on."""
    from dsan_tf.core.rundir import read_history
    from dsan_tf.training.setting import EncodedSetting

    setting = tmp_path / "demo.npz"
    stdout = ok(cli("encode_setting", DEMO, f"--output={setting}"))
    assert stdout.strip().splitlines()[-1] == (
        f"encoded setting: {setting} (train 672 pairs, dev 168 pairs, 16 ids)")
    loaded = EncodedSetting.load(setting)
    assert loaded.vocabulary_size == 16  # the demo's 14 words, padding and [UNK]
    assert loaded.config.model_config.embedding_dim == 32 and loaded.word_vectors is None
    workdir = tmp_path / "run"
    flags = [f"--setting={setting}", f"--workdir={workdir}", "--nocompilation_cache"]
    first, extended = cli_in_child([("train", [*flags, "--epochs=3"]),
                                    ("train", [*flags, "--epochs=4"])], JAX,
                                   without=("tensorflow",))
    for done in (first, extended):
        assert done.returncode == 0, done.stderr[-3000:]
    assert "TensorBoard: no event files (TensorFlow writes them; it is not installed)" \
        in first.stdout
    assert re.fullmatch(r"dev accuracy 1\.0000 \(best epoch 3\); 3 epochs, \d:\d\d:\d\d of "
                        rf"training; model: {re.escape(str(workdir / 'best.keras'))}",
                        first.stdout.strip().splitlines()[-1])
    config = json.loads((workdir / "config.json").read_text())
    assert config["provenance"]["keras_backend"] == "jax"
    assert config["provenance"]["tensorflow"] is None and config["vocab_size"] == 16
    # JAX on a CPU: per-length programs, one grid of lengths for both sides.
    assert config["policy"]["sentence_programs"] and config["policy"]["bounded_shapes"]
    results = json.loads((workdir / "results.json").read_text())
    assert results["compiled_ahead"]["train_shapes"] == 1  # the demo: one length
    ahead = results["compiled_ahead"]["per_shape"]  # each shape's compile, timed
    assert [row["step"] for row in ahead] == ["train", "eval"] and all(
        row["seconds"] > 0 for row in ahead)
    assert results["batch_shapes"]["chosen"]["by"] == "shared_lengths"
    assert not (workdir / "tensorboard").exists()
    # Trained on from the run's record.
    assert f"extending {workdir}: 3 epoch(s) done, training epochs 4 to 4" in extended.stdout
    assert [row["epoch"] for row in read_history(workdir / "history.csv")] == [1, 2, 3, 4]


def test_a_missing_or_broken_setting_file_is_one_sentence(tmp_path):
    """A --setting that is not there, or is no encoded setting: one sentence naming it."""
    broken = tmp_path / "broken.npz"
    broken.write_text("not an archive")
    done = cli_in_child([("train", [f"--setting={tmp_path / 'none.npz'}",
                                    f"--workdir={tmp_path / 'run'}"]),
                         ("train", [f"--setting={broken}", f"--workdir={tmp_path / 'run'}"])],
                        env=JAX)
    for run in done:
        assert run.returncode == 1 and "Traceback" not in run.stderr
    assert done[0].stderr.strip().splitlines()[-1] == \
        f"error: flag --setting={tmp_path / 'none.npz'}: no such file."
    assert done[1].stderr.strip().splitlines()[-1].startswith(f"error: --setting={broken}: ")
