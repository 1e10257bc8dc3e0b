"""Many runs on Ray: where they run, with what, and what a lost worker costs.

Ray (an optional extra: `pip install -r requirements-ray.txt`) schedules the runs of a
study (`experiments.results`) and the trials of a sweep (`dsan-tune`): each run is one Ray
task that declares its CPUs and GPUs (fractions allowed, so that several runs share one
GPU), an ensemble waits on its members' tasks, and a task whose worker or node dies is
retried by Ray. A retry resumes the run directory exactly (its crash-safe record:
`dsan_tf.training.run_state`), so a lost node costs at most the epoch in progress; the
training process dies with the task that started it (`run_program`), so a retry never
waits on the lock of a dead attempt.

With no address Ray starts on this machine; `address="auto"` or "ray://HOST:PORT" joins
a cluster started with Ray's own `ray start`. The folders runs write must be reachable
from every node: `check_shared` has each node read a probe the driver wrote and write its
own, before any run starts.
"""

import ctypes
import math
import os
import signal
import subprocess
import sys
import time
import uuid

from dsan_tf.common.errors import UsageError

# How often Ray retries a run whose worker or node died (its directory resumes each time).
RETRIES = 3
_PR_SET_PDEATHSIG = 1


def require_ray():
    """The `ray` module; `UsageError` naming the install where it is missing."""
    # Each run's "started on NODE" line is news: Ray would fold alike lines into one (it
    # reads this when it is imported).
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    try:
        import ray
    except ImportError:
        raise UsageError("runs are scheduled by Ray, which is not installed: pip install -r "
                         "requirements-ray.txt (an optional extra, as JAX is).") from None
    return ray


def connect(address=None):
    """Starts Ray on this machine (`address` None) or joins the cluster at `address`
    ("auto", "ray://HOST:PORT"); returns the seconds it took. One sentence where no
    cluster answers there."""
    ray = require_ray()
    started = time.perf_counter()
    if ray.is_initialized():
        return 0.0
    try:
        # "local": a Ray of its own, not the latest one `ray start` left on this machine
        # (which ray.init() without an address would join).
        ray.init(address=address or "local", include_dashboard=False,
                 logging_level="warning", configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError) as error:
        said = " ".join(str(error).split())[:300]
        raise UsageError(f"no Ray cluster answers at ray_address={address} ({said}); start "
                         "one with `ray start --head`, or leave ray_address out to run on "
                         "this machine.", fields=("ray_address",)) from None
    return time.perf_counter() - started


def check_shared(paths):
    """Checks that every alive node of the cluster reads and writes each folder of
    `paths` as this process does: the driver writes a probe file in each, a task on each
    node reads it and writes its own beside it, the driver reads those. `UsageError`, one
    sentence naming the folder and the node, where one does not."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    token = uuid.uuid4().hex[:12]
    probes = []
    for path in paths:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(os.path.abspath(path), f".ray-probe-{token}")
        with open(probe, "w", encoding="utf-8") as stream:
            stream.write(token)
        probes.append(probe)
    nodes = [node for node in ray.nodes() if node["Alive"]]
    try:
        probe_node = ray.remote(num_cpus=0)(_probe)
        answers = ray.get([probe_node.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            node["NodeID"], soft=False)).remote(probes, token, node["NodeID"])
            for node in nodes])
        for node, (fault, address) in zip(nodes, answers):
            if fault is None:  # it wrote: is that what this machine reads there?
                fault = next((f"{os.path.dirname(probe)} does not hold the probe it wrote "
                              "there" for probe in probes
                              if not os.path.exists(f"{probe}-{node['NodeID']}")), None)
            if fault:
                raise UsageError(f"{fault}: the node {address} does not share this "
                                 "machine's folders; give --workdir and --record_dir folders "
                                 "every node reaches (a shared file system, as NFS).",
                                 fields=("workdir", "record_dir"))
    finally:
        for probe in probes:
            for node in nodes:
                _remove(f"{probe}-{node['NodeID']}")
            _remove(probe)
    return len(nodes)


def _probe(probes, token, node_id):
    """On one node: (what it could not read or write, or None; its address)."""
    import ray

    address = ray.util.get_node_ip_address()
    for probe in probes:
        try:
            with open(probe, encoding="utf-8") as stream:
                if stream.read() != token:
                    return f"{os.path.dirname(probe)} holds another probe there", address
            with open(f"{probe}-{node_id}", "w", encoding="utf-8") as stream:
                stream.write(token)
        except OSError as error:
            return (f"{os.path.dirname(probe)} cannot be read and written there "
                    f"({error.strerror})"), address
    return None, address


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def task_options(cpus, gpus):
    """The options of a run's task: its CPUs and GPUs (fractions share a device), and
    Ray's retries of a task whose worker or node died (its exceptions are not retried: a
    run's own error is reported, not repeated)."""
    if cpus <= 0 or gpus < 0:
        raise UsageError(f"cpus_per_run={cpus}, gpus_per_run={gpus}: a run needs a positive "
                         "number of CPUs and no negative number of GPUs.",
                         fields=("cpus_per_run", "gpus_per_run"))
    return {"num_cpus": cpus, "num_gpus": gpus, "max_retries": RETRIES,
            "retry_exceptions": False}


def threads_for(cpus):
    """The threads a run's frameworks may use on its `cpus` (at least one)."""
    return max(1, math.ceil(cpus))


def _die_with_parent():
    """In the child, before it runs: the kernel kills it when the process that started it
    ends, however it ends (a Ray worker killed with its node), so that no training outlives
    its task and holds the run's lock against the retry."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def run_program(argv, log_path, threads=None):
    """Runs a program (its output into `log_path`), dying with this process on Linux;
    with `threads`, TensorFlow's and OpenMP's thread pools sized to them (a run's share
    of the node's cores). Returns None, or one line saying how it failed."""
    env = dict(os.environ)
    if threads:
        env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads))
    preexec = _die_with_parent if sys.platform.startswith("linux") else None
    with open(log_path, "w", encoding="utf-8") as log:
        result = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, text=True,
                                env=env, preexec_fn=preexec)
    if result.returncode:
        with open(log_path, encoding="utf-8") as log:
            last = [line for line in log.read().splitlines() if line.strip()][-1:]
        return f"failed ({last[0] if last else 'no output'}); log: {log_path}"
    return None


def node_address():
    """The address of the node this task runs on."""
    import ray

    return ray.util.get_node_ip_address()
