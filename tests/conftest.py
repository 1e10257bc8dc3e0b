import importlib.util
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Each xdist worker (pytest.ini: 2, for 2 cores) computes on one thread, and so do the
    # programs it starts: TensorFlow's and oneDNN's thread pools are otherwise sized to every
    # core in every process, 2 workers and their children spinning on 2 cores (one pair of
    # runs: 9.6 minutes and 16.5 CPU-minutes so, against 10.3 and 17.7 without; CI's next
    # run took 10.1 minutes with it: the gain is within this machine's noise).
    for variable in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
BACKEND = os.environ.setdefault("KERAS_BACKEND", "tensorflow")

# The test files that need Keras only (layers, models, masks, parameter counts, .keras
# files). Under another backend (`KERAS_BACKEND=jax python -m pytest`) only they run, with
# TensorFlow made unimportable, so that a use of TensorFlow on the model's path fails;
# their tests marked `tensorflow` (tf.function, SavedModel, tf.data) are skipped.
BACKEND_NEUTRAL = ("test_afdmn.py", "test_analysis.py", "test_batching.py",
                   "test_compile_shapes.py", "test_gaussian_transformer.py",
                   "test_layers.py", "test_masks.py", "test_metrics.py", "test_model.py",
                   "test_priors.py", "test_registry.py",
                   "test_san4nli.py")
if BACKEND != "tensorflow":
    sys.modules["tensorflow"] = None  # `import tensorflow` raises ImportError
    collect_ignore = sorted(name for name in os.listdir(os.path.dirname(__file__))
                            if name.startswith("test_") and name.endswith(".py")
                            and name not in BACKEND_NEUTRAL)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dsan_tf import DSANConfig  # noqa: E402
from helpers import SMALL, shared_once  # noqa: E402


if BACKEND == "torch":
    import torch

    _array = torch.Tensor.__array__

    def _detached_array(self, *args, **kwargs):
        # np.asarray(model(x)) as on the other backends (keras.ops.convert_to_numpy
        # detaches too): a torch tensor that requires grad refuses numpy() otherwise.
        return _array(self.detach().cpu(), *args, **kwargs)

    torch.Tensor.__array__ = _detached_array


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("jax") is None:
        missing = pytest.mark.skip(reason="needs JAX (pip install -r requirements-jax.txt)")
        for item in items:
            if "jax" in item.keywords:
                item.add_marker(missing)
    if BACKEND == "tensorflow":
        return
    skip = pytest.mark.skip(reason=f"needs TensorFlow (KERAS_BACKEND={BACKEND})")
    for item in items:
        if "tensorflow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def small_config():
    """A DSAN small enough for fast tests (d_e 24, 4 heads)."""
    return DSANConfig(**SMALL)


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


# The README's first command, shortened to 4 epochs, with an export and a probe sentence:
# the finished run that the programs' tests read (test_cli, test_first_hour, test_docs).
DEMO_FLAGS = ("--config=demo", "--epochs=4",
              "--probe_sentence=the dog saw the cat")


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """(run directory, what the program printed): the demo run, trained once per test run
    and shared by every xdist worker (`helpers.shared_once`). Tests read it; a test that
    changes a run works on a copy."""
    from helpers import cli

    def train(workdir):
        done = cli("train", *DEMO_FLAGS, f"--workdir={workdir}",
                   f"--export_dir={workdir / 'export'}")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    return shared_once(tmp_path_factory, "demo", train)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def ray_alone():
    """Holds an OS lock while a test runs Ray, so that the suite's workers never run two
    at once: a Ray started without an address may join another test's cluster on this
    machine, and a node one test removes would be gone from the other's."""
    import fcntl
    import tempfile

    with open(os.path.join(tempfile.gettempdir(), "dsan_tf_tests_ray.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _ray_reads_its_auth_mode_again()
        yield
        _ray_reads_its_auth_mode_again()  # after monkeypatch put RAY_AUTH_MODE back


def _ray_reads_its_auth_mode_again():
    """Ray keeps the authentication mode it read first in a process: after a test that ran
    Ray with RAY_AUTH_MODE=disabled (a node joined by `ray start`), a later test's driver
    sent no token to a head that wanted one ("Missing authorization header", then "Failed
    to start GCS"). Ray's own tests reset it so (`reset_auth_token_state`)."""
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:  # no Ray (its tests skip), or a Ray without token authentication
        return
    reset_auth_token_state()
