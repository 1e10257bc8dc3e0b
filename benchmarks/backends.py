"""What the benchmarks need to know of the Keras backend they run on, without assuming
TensorFlow: its name and version, the device, waiting for a result, peak memory, and
whether an error means the device ran out of memory.

Only the running backend's framework is imported (TensorFlow, JAX or PyTorch).
"""

import importlib.util
import os

import keras

from benchmarks import machine

BACKENDS = ("tensorflow", "jax", "torch")


def installed():
    """The Keras backends whose framework is installed here, in `BACKENDS` order."""
    return [name for name in BACKENDS if importlib.util.find_spec(name)]


def _accelerator():
    """(framework version, accelerator name or None) of the running backend."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return jax.__version__, None if device.platform == "cpu" else device.device_kind
    if backend == "torch":
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        return torch.__version__, gpu
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    gpu = (tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)
           if gpus else None)
    return tf.__version__, gpu


def info():
    """The backend, its version, Keras' version and the device the model runs on."""
    version, gpu = _accelerator()
    cpu, avx512 = machine.cpu_model()
    return {"backend": keras.backend.backend(), "backend_version": version,
            "keras": keras.__version__, "device": gpu or f"CPU: {cpu}", "gpu": gpu,
            "cpu_model": cpu, "avx512": avx512, "cpus": os.cpu_count(),
            "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(TF's default)")}


def synchronize(value):
    """Waits until the device has computed `value` (JAX and PyTorch on a GPU return
    before it is done)."""
    backend = keras.backend.backend()
    if backend == "jax":
        value.block_until_ready()
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
    else:
        value.numpy()
    return value


def is_out_of_memory(error):
    """Whether `error` is the device running out of memory, on any backend."""
    text = f"{type(error).__name__} {error}"
    return any(mark in text for mark in ("ResourceExhausted", "RESOURCE_EXHAUSTED",
                                         "OutOfMemoryError", "out of memory"))


def _vmhwm():
    """The process's peak resident set size in bytes (Linux VmHWM), or None."""
    try:
        with open("/proc/self/status") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_rss_peak():
    try:  # "5" resets the peak resident set size (proc(5))
        with open("/proc/self/clear_refs", "w") as stream:
            stream.write("5")
        return True
    except OSError:
        return False


def _allocator():
    """(reset, peak, source) functions of the running backend's device allocator, or None
    where it keeps no statistics (TF's CPU allocator with oneDNN off, JAX and PyTorch on a
    CPU)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        if not (device.memory_stats() or {}).get("peak_bytes_in_use"):
            return None
        # JAX cannot reset its peak: it is the peak since start (the sweep's lengths grow).
        return (lambda: None, lambda: device.memory_stats()["peak_bytes_in_use"],
                f"jax_allocator_since_start:{device.platform}")
    if backend == "torch":
        import torch

        if not torch.cuda.is_available():
            return None
        return torch.cuda.reset_peak_memory_stats, torch.cuda.max_memory_allocated, \
            "torch_allocator:cuda:0"
    import tensorflow as tf

    device = "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
    try:
        tf.config.experimental.reset_memory_stats(device)
    except (ValueError, RuntimeError, tf.errors.OpError):
        return None  # this device's allocator keeps no statistics
    return (lambda: tf.config.experimental.reset_memory_stats(device),
            lambda: tf.config.experimental.get_memory_info(device)["peak"],
            f"tf_allocator:{device}")


class Memory:
    """Peak memory over a block, from the most exact source this machine offers.

    The device allocator's statistics where it keeps them (`_allocator`); elsewhere the
    process's peak resident set size, reset before the block where Linux allows it.
    `source` names the one used: e.g. "tf_allocator:CPU:0", "torch_allocator:cuda:0",
    "jax_allocator_since_start:gpu", "process_peak_rss" (reset before the block),
    "process_peak_rss_since_start" (could not be reset: includes earlier work) or
    "unavailable" (then `peak_bytes` is None, never 0). `peak_rss_bytes` is the process
    figure whatever the source.
    """

    def __enter__(self):
        self._allocator = _allocator()
        if self._allocator:
            self._allocator[0]()
        self._rss_reset = _reset_rss_peak()
        return self

    def __exit__(self, *exc):
        allocator_peak = self._allocator[1]() if self._allocator else None
        self.peak_rss_bytes = _vmhwm()
        if allocator_peak:
            self.peak_bytes, self.source = allocator_peak, self._allocator[2]
        elif self.peak_rss_bytes:
            self.peak_bytes = self.peak_rss_bytes
            self.source = ("process_peak_rss" if self._rss_reset
                           else "process_peak_rss_since_start")
        else:
            self.peak_bytes, self.source = None, "unavailable"
