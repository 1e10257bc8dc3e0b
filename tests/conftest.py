import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dsan_tf import DSANConfig  # noqa: E402
from helpers import SMALL  # noqa: E402


@pytest.fixture
def small_config():
    """A DSAN small enough for fast tests (d_e 24, 4 heads)."""
    return DSANConfig(**SMALL)


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
