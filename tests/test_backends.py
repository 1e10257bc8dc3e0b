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

from dsan_tf.models import registry

BACKENDS = [name for name, module in (("tensorflow", "tensorflow"), ("jax", "jax"),
                                      ("torch", "torch"))
            if importlib.util.find_spec(module)]

# Builds each family small, compiled as for training, and saves it as BACKEND.FAMILY.keras
# in the directory argv[1], with its inference logits on the fixed inputs argv[2]; then
# loads every .keras file there (the other backends' too) and gives its logits. Runs in this
# process for TensorFlow, in a child process for each other backend.
PORTABILITY = """
import json, os, sys
if os.environ["KERAS_BACKEND"] != "tensorflow":
    sys.modules["tensorflow"] = None  # `import tensorflow` fails: the models need Keras only
import keras, numpy as np
from dsan_tf.core.config import MODELS, model_config
from dsan_tf.core.task import NLITask
import dsan_tf.models
from dsan_tf.core.task import build_model

from dsan_tf.models import registry

# Each family's own sizes (its testing.py, found by tests/families.py).
sys.path.append(os.path.join(os.path.dirname(dsan_tf.models.__file__), "..", "..", "tests"))
import families
SMALL = {name: families.small(name) for name in MODELS}


def logits_of(model, inputs):
    # The inference logits (`predict` would give probabilities, which are all 1/3 for a
    # freshly initialised AF-DMN); eager on TensorFlow and PyTorch, jitted on JAX, whose
    # op-by-op dispatch is slower than compiling.
    call = lambda x: model(x, training=False)  # noqa: E731
    if keras.backend.backend() == "jax":
        import jax
        call = jax.jit(call)
    return keras.ops.convert_to_numpy(call(inputs)).tolist()


def save(directory, inputs):
    backend, logits = keras.backend.backend(), {}
    for name in MODELS:
        keras.utils.set_random_seed(0)
        config = model_config(name, vocab_size=50, embedding_dim=8, **SMALL[name])
        model = NLITask().compile(build_model(name, config))
        model.save(os.path.join(directory, f"{backend}.{name}.keras"))
        logits[name] = logits_of(model, inputs)
    return {"backend": backend, "tensorflow_loaded": bool(sys.modules.get("tensorflow")),
            "logits": logits}


def load(directory, inputs):
    # The other backends' files: a file read back where it was made is checked by each
    # family's fresh-process reload test (and under JAX by `KERAS_BACKEND=jax pytest`).
    backend, logits = keras.backend.backend(), {}
    for file in sorted(os.listdir(directory)):
        if file.endswith(".keras") and not file.startswith(backend + "."):
            model = dsan_tf.models.registry.load_model(os.path.join(directory, file))
            logits[file] = logits_of(model, inputs)
    return {"backend": backend, "logits": logits}


if __name__ == "__main__":
    inputs = dict(np.load(sys.argv[2]))
    print(json.dumps(save(sys.argv[1], inputs)))
    print(json.dumps(load(sys.argv[1], inputs)))
"""


def run(backend, directory, inputs, save=True):
    """(saved or None, loaded or None) under `backend`: in this process for TensorFlow
    (`save` says which of the two), else both in a child."""
    if backend == "tensorflow":
        namespace = {"__name__": "portability"}
        exec(PORTABILITY, namespace)
        arrays = dict(np.load(inputs))
        if save:
            return namespace["save"](directory, arrays), None
        return None, namespace["load"](directory, arrays)
    result = subprocess.run([sys.executable, "-c", PORTABILITY, str(directory), str(inputs)],
                            cwd=ROOT, env=dict(ENV, KERAS_BACKEND=backend),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{backend}: {result.stderr[-3000:]}"
    return [json.loads(line) for line in result.stdout.strip().splitlines()[-2:]]


def check_portability(directory, backends):
    """Saves every family under each of `backends` and loads each file under every other
    backend: each other backend saves and loads (the other backends' files saved so far)
    in its child process, then TensorFlow (the first) loads all the others'."""
    rng = np.random.default_rng(0)
    premise = rng.integers(2, 50, (4, 7)).astype("int32")
    hypothesis = rng.integers(2, 50, (4, 5)).astype("int32")
    premise[1, 2:] = 0  # padding, and a one-word premise
    premise[2, 1:] = 0
    hypothesis[3, 3:] = 0
    inputs = directory / "inputs.npz"
    np.savez(inputs, premise=premise, hypothesis=hypothesis)
    saved, loads = {}, []
    for backend in backends:
        result, loaded = run(backend, directory, inputs)
        assert result["backend"] == backend
        assert result["tensorflow_loaded"] == (backend == "tensorflow")
        saved.update({f"{backend}.{name}.keras": np.array(value)
                      for name, value in result["logits"].items()})
        if loaded is not None:
            assert loaded["backend"] == backend
            loads.append((backend, loaded["logits"]))
    assert len(saved) == len(registry.names()) * len(backends)  # every family, each backend
    loads.append((backends[0], run(backends[0], directory, inputs, save=False)[1]["logits"]))
    for backend, loaded in loads:
        for file, logits in loaded.items():  # each backend reads what was there then
            # Relative to the logits' scale.
            np.testing.assert_allclose(np.array(logits), saved[file], rtol=0,
                                       atol=1e-5 * np.abs(saved[file]).max(),
                                       err_msg=f"{file} loaded under {backend}")
    # TensorFlow read every other backend's files
    assert sorted(loads[-1][1]) == sorted(f for f in saved if not f.startswith("tensorflow."))
    assert all(loaded for _, loaded in loads)


@pytest.mark.jax
def test_keras_files_are_portable_between_tensorflow_and_jax(tmp_path):
    check_portability(tmp_path, ["tensorflow", "jax"])


@pytest.mark.slow  # PyTorch's Keras builds AF-DMN's LSTMs step by step: minutes
@pytest.mark.skipif("torch" not in BACKENDS, reason="PyTorch is not installed")
def test_keras_files_are_portable_to_and_from_pytorch(tmp_path):
    check_portability(tmp_path, BACKENDS)

