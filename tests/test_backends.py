"""One model, three backends: every family builds, trains and saves on each installed
Keras backend without TensorFlow, and a `.keras` file saved under one backend gives the
same logits under each other one.

Each backend runs in its own fresh process (Keras picks its backend once per process);
under JAX and PyTorch, TensorFlow is made unimportable there. The layer battery, padding
invariance, masks and parameter counts run on another backend with
`KERAS_BACKEND=jax python -m pytest` (tests/conftest.py), which CI does; the programs
on JAX are tested in tests/test_jax.py.
"""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from helpers import ENV, ROOT

BACKENDS = [name for name, module in (("tensorflow", "tensorflow"), ("jax", "jax"),
                                      ("torch", "torch"))
            if importlib.util.find_spec(module)]

# Builds each family small, compiled as for training, and saves it as BACKEND.FAMILY.keras
# in the directory argv[1], with its inference logits on the fixed inputs argv[2].
SAVE = """
import json, os, sys
if os.environ["KERAS_BACKEND"] != "tensorflow":
    sys.modules["tensorflow"] = None  # `import tensorflow` fails: the models need Keras only
import keras, numpy as np
from dsan_tf.config import MODELS, model_config
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
    config = model_config(name, vocab_size=50, embedding_dim=8, **SMALL[name])
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
import dsan_tf.models
inputs = dict(np.load(sys.argv[2]))
logits = {}
for file in sorted(os.listdir(sys.argv[1])):
    if file.endswith(".keras"):
        model = dsan_tf.models.load_model(os.path.join(sys.argv[1], file))
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

