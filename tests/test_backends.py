"""One model, three backends: every family builds, trains and saves on each installed
Keras backend without TensorFlow, and a `.keras` file saved under one backend gives the
same logits under each other one.

Each backend runs in its own fresh process (Keras picks its backend once per process);
under JAX and PyTorch, TensorFlow is made unimportable there. The layer battery, padding
invariance, masks and parameter counts run on another backend with
`KERAS_BACKEND=jax python -m pytest` (tests/conftest.py), which CI does.
"""

import csv
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from helpers import ENV, ROOT, cli, ok

BACKENDS = [name for name, module in (("tensorflow", "tensorflow"), ("jax", "jax"),
                                      ("torch", "torch"))
            if importlib.util.find_spec(module)]

# Builds each family small, compiled as for training, and saves it as BACKEND.FAMILY.keras
# in the directory argv[1], with its inference logits on the fixed inputs argv[2].
SAVE = """
import json, os, sys
if os.environ["KERAS_BACKEND"] != "tensorflow":
    sys.modules["tensorflow"] = None  # `import tensorflow` fails: the models need Keras only
import dataclasses
import keras, numpy as np
from dsan_tf.config import MODELS, DSANConfig
from dsan_tf.models import build_model
from dsan_tf.optimization import compile_for_training

SMALL = {"dsan": dict(num_heads=2, ffn_dim=16), "disan": {}, "cbow": {},
         "gaussian_transformer": dict(char_dim=4, model_dim=8, num_heads=2),
         "afdmn": dict(lstm_units=8)}
backend = keras.backend.backend()
inputs = dict(np.load(sys.argv[2]))
logits = {}
for name in MODELS:
    keras.utils.set_random_seed(0)
    config = dataclasses.replace(DSANConfig.for_model(name), vocab_size=50, embedding_dim=8,
                                 **SMALL[name])
    model = compile_for_training(build_model(name, config))
    model.save(os.path.join(sys.argv[1], f"{backend}.{name}.keras"))
    logits[name] = model.predict_on_batch(inputs).tolist()
print(json.dumps({"backend": backend, "tensorflow_loaded": bool(sys.modules.get("tensorflow")),
                  "logits": logits}))
"""

# Loads every .keras file in argv[1] and prints its logits on the inputs argv[2].
LOAD = """
import json, os, sys
if os.environ["KERAS_BACKEND"] != "tensorflow":
    sys.modules["tensorflow"] = None
import keras, numpy as np
import dsan_tf.models  # registers the layers and models
inputs = dict(np.load(sys.argv[2]))
logits = {}
for file in sorted(os.listdir(sys.argv[1])):
    if file.endswith(".keras"):
        model = keras.models.load_model(os.path.join(sys.argv[1], file))
        logits[file] = model.predict_on_batch(inputs).tolist()
print(json.dumps({"backend": keras.backend.backend(), "logits": logits}))
"""


def run(script, backend, *args):
    result = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=ROOT,
                            env=dict(ENV, KERAS_BACKEND=backend), capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"{backend}: {result.stderr[-3000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_portability(directory, backends):
    """Saves every family under each of `backends` and loads every file under each."""
    rng = np.random.default_rng(0)
    premise = rng.integers(2, 50, (4, 7)).astype("int32")
    hypothesis = rng.integers(2, 50, (4, 5)).astype("int32")
    premise[1, 2:] = 0  # padding, and a one-word premise
    premise[2, 1:] = 0
    hypothesis[3, 3:] = 0
    inputs = directory / "inputs.npz"
    np.savez(inputs, premise=premise, hypothesis=hypothesis)
    saved = {}
    for backend in backends:
        result = run(SAVE, backend, directory, inputs)
        assert result["backend"] == backend
        assert result["tensorflow_loaded"] == (backend == "tensorflow")
        saved.update({f"{backend}.{name}.keras": np.array(value)
                      for name, value in result["logits"].items()})
    assert len(saved) == 5 * len(backends)
    for backend in backends:
        loaded = run(LOAD, backend, directory, inputs)["logits"]
        assert sorted(loaded) == sorted(saved)
        for file, expected in saved.items():
            np.testing.assert_allclose(np.array(loaded[file]), expected, rtol=0, atol=1e-5,
                                       err_msg=f"{file} loaded under {backend}")


@pytest.mark.skipif("jax" not in BACKENDS, reason="JAX is not installed")
def test_keras_files_are_portable_between_tensorflow_and_jax(tmp_path):
    check_portability(tmp_path, ["tensorflow", "jax"])


@pytest.mark.slow  # PyTorch's Keras builds AF-DMN's LSTMs step by step: minutes
@pytest.mark.skipif("torch" not in BACKENDS, reason="PyTorch is not installed")
def test_keras_files_are_portable_to_and_from_pytorch(tmp_path):
    check_portability(tmp_path, BACKENDS)


JAX = {"KERAS_BACKEND": "jax"}
needs_jax = pytest.mark.skipif("jax" not in BACKENDS, reason="JAX is not installed")
DEMO = "--flagfile=experiments/configs/demo.cfg"


def history(workdir):
    with open(workdir / "history.csv") as stream:
        return list(csv.DictReader(stream))


@needs_jax
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


@needs_jax
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
