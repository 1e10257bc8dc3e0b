"""The machine and code a result came from, read without Keras or TensorFlow.

The same seed and code give different numbers on different CPUs (oneDNN is on where TF finds
AVX-512, off elsewhere), and code that changes a computation changes a run: a record that
names both can be told apart from one made elsewhere (docs/STUDY.md, "SAN4NLI's departures").
"""

import os
import platform

from dsan_tf.core import rundir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model():
    """(CPU model name, whether it has AVX-512; None where /proc/cpuinfo is missing)."""
    try:
        with open("/proc/cpuinfo") as stream:
            info = stream.read()
    except OSError:
        return platform.processor() or platform.machine(), None
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), platform.machine())
    return model, " avx512f" in info


def describe(root=ROOT):
    """{"git_commit", "cpu_model", "avx512", "tf_enable_onednn_opts"} of this checkout and
    machine (git_commit None outside a checkout; "-dirty" when files differ from it)."""
    model, avx512 = cpu_model()
    return {"git_commit": rundir.git_commit(root), "cpu_model": model, "avx512": avx512,
            "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(TF's default)")}
