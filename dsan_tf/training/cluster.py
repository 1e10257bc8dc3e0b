"""Many runs on Ray: where they run, with what, and what a lost worker costs.

Ray (an optional extra: `pip install -r requirements-ray.txt`) schedules the runs of a
study (`experiments.results`) and the trials of a sweep (`dsan-tune`): each run is one Ray
task that declares its CPUs and GPUs (fractions allowed, so that several runs share one
GPU), an ensemble waits on its members' tasks, and a task whose worker or node dies is
retried by Ray. A retry resumes the run directory exactly (its crash-safe record:
`dsan_tf.training.run_state`), so a lost node costs at most the epoch in progress; the
training process dies with the task that started it (`run_program`), so a retry never
waits on the lock of a dead attempt.

A cluster is not this machine. With no address Ray starts here; `address="auto"` or
"HOST:PORT" joins a cluster started with Ray's own `ray start`, and `connect` ships the
code (this package, and the clone's `experiments` and `benchmarks`) to every node in the
job's `runtime_env`, so that a node needs Ray and the requirements, not a clone. Every path
a run reads or writes is made absolute here (a node's folder is wherever its `ray start`
ran), and `check_nodes` has each node read each input file and write each output folder,
and `check_resources` finds a node that can hold one run, before any run starts.
"""

import ctypes
import datetime
import importlib.util
import math
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

from dsan_tf.common.errors import UsageError

# How often Ray retries a run whose worker or node died (its directory resumes each time).
RETRIES = 3
_PR_SET_PDEATHSIG = 1
# The modules a run's code imports, shipped to every node (those this process finds).
SHIPPED = ("dsan_tf", "experiments", "benchmarks")
# How long the address of a cluster may take to answer before it is said to answer none.
CONNECT_SECONDS = 10


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


def runtime_env(gpus=0.0):
    """The job's `runtime_env`: the code of the runs as this process imports it
    (`py_modules`: each folder of `SHIPPED` found, uploaded once and unpacked on each
    node, on the runs' `sys.path` and their programs' PYTHONPATH), and where each run
    takes a fraction `gpus` of a GPU, the environment that keeps it to that share of the
    GPU's memory (`gpu_memory`)."""
    folders = []
    for name in SHIPPED:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders.append(os.path.abspath(list(spec.submodule_search_locations)[0]))
    env = {"py_modules": folders, "excludes": ["__pycache__", "*.pyc"]}
    if 0 < gpus < 1:
        env["env_vars"] = gpu_memory(gpus)
    return env


def connect(address=None, gpus=0.0):
    """Starts Ray on this machine (`address` None) or joins the cluster at `address`
    ("auto": the one `ray start` made on this machine, or "HOST:PORT"), shipping the code
    (`runtime_env`, for runs of `gpus` GPUs each); returns the seconds it took. One
    sentence, within `CONNECT_SECONDS`, where no cluster answers there (Ray itself would
    retry for minutes)."""
    ray = require_ray()
    started = time.perf_counter()
    if ray.is_initialized():
        return 0.0
    if address:
        _check_answers(ray, address)
    try:
        # "local": a Ray of its own, not the latest one `ray start` left on this machine
        # (which ray.init() without an address would join).
        ray.init(address=address or "local", include_dashboard=False,
                 runtime_env=runtime_env(gpus), logging_level="warning",
                 configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError) as error:
        said = " ".join(str(error).split())[:300]
        if address and os.environ.get("RAY_AUTH_MODE") != "token":
            said += ("; a cluster whose head has an auth token admits a driver that has its "
                     "copy in ~/.ray/auth_token and RAY_AUTH_MODE=token")
        raise _no_cluster(address, said) from None
    return time.perf_counter() - started


def _check_answers(ray, address):
    """`UsageError` unless something listens at the cluster's address (Ray's own
    `ray start` file for "auto"), within `CONNECT_SECONDS`."""
    if address.startswith("ray://"):
        raise UsageError(f"ray_address={address}: Ray Client addresses are not supported "
                         "(this program would read and write its folders on this machine, "
                         "its runs theirs on the cluster's nodes); run the command on a node "
                         "of the cluster with --ray_address=auto, or submit it with `ray job "
                         "submit --working-dir . -- COMMAND`.", fields=("ray_address",))
    try:
        from ray._private.services import canonicalize_bootstrap_address
        resolved = canonicalize_bootstrap_address(address) or address
        host, port = resolved.rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except (ConnectionError, OSError, ValueError) as error:
        raise _no_cluster(address, " ".join(str(error).split())[:200]) from None


def _no_cluster(address, said):
    where = f"ray_address={address}" if address else "this machine"
    return UsageError(f"no Ray cluster answers at {where} ({said}); start one with `ray start "
                      "--head`, or leave ray_address out to run on this machine.",
                      fields=("ray_address",))


def alive_nodes():
    """The cluster's nodes that are alive (Ray's `ray.nodes()` entries)."""
    return [node for node in require_ray().nodes() if node["Alive"]]


def check_resources(cpus, gpus, flags=("cpus_per_run", "gpus_per_run")):
    """`UsageError` naming `flags` unless one alive node has `cpus` CPUs and `gpus` GPUs
    (Ray would otherwise wait for such a node for ever, saying only that none fits)."""
    nodes = [node["Resources"] for node in alive_nodes()]
    if any(n.get("CPU", 0) >= cpus and n.get("GPU", 0) >= gpus for n in nodes):
        return
    most_cpus = max((n.get("CPU", 0) for n in nodes), default=0)
    most_gpus = max((n.get("GPU", 0) for n in nodes), default=0)
    raise UsageError(f"{flags[0]}={cpus:g} and {flags[1]}={gpus:g}: no node of the cluster "
                     f"has that much (its {len(nodes)} node(s) have at most {most_cpus:g} "
                     f"CPUs and {most_gpus:g} GPUs); ask for less per run.", fields=flags)


def check_nodes(writes, reads=()):
    """Checks that every alive node of the cluster reads each file of `reads` and reads
    and writes each folder of `writes` as this process does: the driver writes a probe
    file in each folder, a task on each node reads the files and the probe and writes its
    own beside it, the driver reads those. `UsageError`, one sentence naming the path and
    the node, where one cannot. Every path must be absolute (a node's folder is not this
    process's). Returns the number of nodes."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    token = uuid.uuid4().hex[:12]
    probes = []
    for path in writes:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(os.path.abspath(path), f".ray-probe-{token}")
        with open(probe, "w", encoding="utf-8") as stream:
            stream.write(token)
        probes.append(probe)
    nodes = alive_nodes()
    try:
        probe_node = ray.remote(num_cpus=0)(_probe)
        answers = ray.get([probe_node.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            node["NodeID"], soft=False)).remote(probes, token, node["NodeID"], list(reads))
            for node in nodes])
        for node, fault in zip(nodes, answers):
            if fault is None:  # it wrote: is that what this machine reads there?
                fault = next((f"{os.path.dirname(probe)} does not hold the probe it wrote "
                              "there" for probe in probes
                              if not os.path.exists(f"{probe}-{node['NodeID']}")), None)
            if fault:
                raise UsageError(f"{fault}: the node {node['NodeManagerAddress']} does not "
                                 "share this "
                                 "machine's files; give folders and files every node reaches "
                                 "at the same path (a shared file system, as NFS).",
                                 fields=("workdir", "record_dir"))
    finally:
        for probe in probes:
            for node in nodes:
                _remove(f"{probe}-{node['NodeID']}")
            _remove(probe)
    return len(nodes)


def _probe(probes, token, node_id, reads):
    """On one node: what it could not read or write, or None."""
    for path in reads:
        try:
            with open(path, "rb") as stream:
                stream.read(1)
        except OSError as error:
            return f"{path} cannot be read there ({error.strerror})"
    for probe in probes:
        try:
            with open(probe, encoding="utf-8") as stream:
                if stream.read() != token:
                    return f"{os.path.dirname(probe)} holds another probe there"
            with open(f"{probe}-{node_id}", "w", encoding="utf-8") as stream:
                stream.write(token)
        except OSError as error:
            return (f"{os.path.dirname(probe)} cannot be read and written there "
                    f"({error.strerror})")
    return None


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


def gpu_memory(gpus):
    """The environment that keeps a run to its share `gpus` (below 1) of one GPU's
    memory: JAX preallocates 75% of a GPU in each process and TensorFlow all of it, unless
    told; 10% is left for the processes' own contexts."""
    return {"XLA_PYTHON_CLIENT_MEM_FRACTION": f"{0.9 * gpus:.3f}",
            "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


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
    """Runs a program, dying with this process on Linux; with `threads`, TensorFlow's and
    OpenMP's thread pools sized to them (a run's share of the node's cores). Its output is
    appended to `log_path` under a line that starts the attempt (a retry's log follows the
    failed attempt's, never over it). Returns None, or one line saying how it failed: the
    program's first `error:` line (else its last line) and the log's path."""
    env = dict(os.environ)
    if threads:
        env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads))
    preexec = _die_with_parent if sys.platform.startswith("linux") else None
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        log.write(f"== attempt started {now} on {node_address()}: {' '.join(argv[1:])}\n")
        log.flush()
        start = log.tell()
        result = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, text=True,
                                env=env, preexec_fn=preexec)
    if result.returncode:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            log.seek(start)
            lines = [line.strip() for line in log.read().splitlines() if line.strip()]
        said = next((line for line in lines if line.startswith("error:")),
                    lines[-1] if lines else f"exit status {result.returncode}, no output")
        return f"{said} (log: {log_path})"
    return None


def node_address():
    """The address of the node this task runs on (this machine's, outside Ray)."""
    ray = require_ray()
    if not ray.is_initialized():
        return socket.gethostname()
    return ray.util.get_node_ip_address()
