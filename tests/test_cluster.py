"""The study and dsan-tune on a cluster that is not one machine, as a Ray user runs one: a
head and a worker started with Ray's own `ray start`, each from a folder of its own with a
HOME of its own, the worker in a mount namespace where this clone's folder is hidden (an
empty tmpfs over it), so that the runs' code can only arrive through Ray's `runtime_env`.
The driver runs the docs' commands from a third folder, with relative paths. Only the data
and work folders (under the test's tmp_path) are shared, as NFS would share them.

A folder of the driver's own (`driver_only`) is hidden from the worker too: an input there
is refused before any run starts. Root only (unshare, mount); Ray is an optional extra."""

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import ENV, ROOT
from test_results import TINY_CONFIG, _shared_data

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -r "
                                        "requirements-ray.txt")
pytestmark = [pytest.mark.slow, pytest.mark.tensorflow]

TINY = TINY_CONFIG  # the study's miniature configuration (tests/test_results.py)
STUDY = ["--shared_data=shared", "--config=tiny.cfg", "--max_seeds=1", "--nosick",
         "--curve_sizes=", "--cpus_per_run=1"]
NOISE = re.compile(r"^(I0000|WARNING: All log|To enable the following|.*cpu_feature_guard)")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ray_start(args, home, folder, hidden=()):
    """`ray start ... --block` from `folder` with HOME `home`, in a session of its own (its
    processes, and only those, are killed at the end); with `hidden`, in a mount namespace
    where each of those folders is an empty tmpfs."""
    command = ["ray", "start", *args, "--block", "--disable-usage-stats"]
    if hidden:
        mounts = " && ".join(f"mount -t tmpfs tmpfs {path}" for path in hidden)
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                   f"{mounts} && cd {folder} && exec {' '.join(command)}"]
    env = {k: v for k, v in ENV.items() if not k.startswith("RAY_")}
    return subprocess.Popen(command, cwd=folder, env=dict(env, HOME=str(home)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(the head's address, the driver's folder, the driver's environment, the test's
    folder, the dashboard's URL): a 2-node cluster whose only CPU is on the worker that
    cannot see this clone."""
    if os.geteuid() != 0:
        pytest.skip("a node with its own mount namespace needs root (unshare, mount)")
    root = tmp_path_factory.mktemp("cluster")
    for name in ("head", "head_home", "worker", "worker_home", "driver", "driver_home",
                 "driver_only"):
        (root / name).mkdir()
    _shared_data(root / "driver" / "shared")
    (root / "driver" / "tiny.cfg").write_text(TINY)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    port, dashboard = _free_port(), _free_port()
    address = f"127.0.0.1:{port}"
    common = [f"--temp-dir={temp}"]
    # The suite's Ray tests run one at a time (conftest's `ray_alone` takes the same lock).
    lock = open(os.path.join(tempfile.gettempdir(), "dsan_tf_tests_ray.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    nodes = []
    try:
        nodes.append(_ray_start(["--head", f"--port={port}", "--num-cpus=0",
                                 "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
                                 f"--dashboard-port={dashboard}", *common],
                                root / "head_home", root / "head"))
        _wait_for_nodes(address, 1, nodes)
        nodes.append(_ray_start([f"--address={address}", "--num-cpus=1",
                                 "--node-ip-address=127.0.0.1", *common],
                                root / "worker_home", root / "worker",
                                hidden=(ROOT, root / "driver_only")))
        _wait_for_nodes(address, 2, nodes)
        env = {k: v for k, v in ENV.items() if not k.startswith("RAY_")}
        env.update(PYTHONPATH=str(ROOT), HOME=str(root / "driver_home"))
        yield address, root / "driver", env, root, f"http://127.0.0.1:{dashboard}"
    finally:
        for node in nodes:  # each node's session: no other Ray on this machine is touched
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        lock.close()


def _wait_for_nodes(address, count, nodes, seconds=120):
    script = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='error'); "
              "print(sum(n['Alive'] for n in ray.nodes()))")
    env = {k: v for k, v in ENV.items() if not k.startswith("RAY_")}
    deadline = time.time() + seconds
    while time.time() < deadline:
        for node in nodes:
            assert node.poll() is None, node.stdout.read()[-3000:]
        done = subprocess.run([sys.executable, "-c", script, address], env=env,
                              capture_output=True, text=True, timeout=120)
        if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
            return
        time.sleep(1)
    raise AssertionError(f"{count} node(s) did not come up at {address}")


def _run(command, cwd, env, timeout=600):
    """A program run as a user runs it: (exit status, its output less TensorFlow's noise)."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    out = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                    if not NOISE.match(line))
    return done.returncode, out


def _study(*flags):
    return [sys.executable, "-m", "experiments.results", *STUDY, *flags]


def test_the_docs_study_trains_every_run_on_a_node_that_has_no_clone(cluster):
    """The docs' cluster command, its paths relative to the driver's folder: every run
    trains on the worker (which sees neither this clone nor the driver's folder as its
    own), its console kept beside its run directory under the attempt's first line, the
    outputs under --workdir with the command that made them."""
    address, driver, env, *_ = cluster
    status, out = _run(_study("--workdir=study", "--variants=cbow", "--variants=dsan",
                              f"--ray_address={address}"), driver, env)
    assert status == 0, out[-4000:]
    assert "snli/cbow/seed0 done on " in out and "snli/dsan/seed0 done on " in out, out
    assert "study: 2 of 2 runs done (0 failed), 0 to go" in out
    study = driver / "study"
    log = next(study.glob("*/snli/cbow/seed0.log")).read_text()
    assert log.startswith("== attempt started ") and "epoch 2/2" in log
    # In the run directory, dsan-train's own console only (no other program's log).
    assert [p.name for p in study.glob("*/snli/*/seed0/*.log")] == ["train.log"] * 2
    record = json.loads((study / "records" / "snli" / "cbow" / "seed0.json").read_text())
    assert 0 <= record["snli_dev_accuracy"] <= 1
    table = (study / "RESULTS.md").read_text()
    assert "python -m experiments.results " in table and "--variants=cbow" in table


def test_a_failing_run_is_counted_and_the_study_exits_1_with_its_first_error(cluster):
    """A run whose flags dsan-train refuses: the study says how many failed, each one's
    first error line and log, and exits 1 (the docs' study above shows the others train)."""
    address, driver, env, *_ = cluster
    (driver / "bad.cfg").write_text(TINY.replace("--num_heads=2", "--num_heads=3"))
    status, out = _run([sys.executable, "-m", "experiments.results",
                        *[f for f in STUDY if not f.startswith("--config")], "--config=bad.cfg",
                        "--workdir=bad", "--variants=dsan", f"--ray_address={address}"],
                       driver, env)
    assert status == 1, out[-3000:]
    failed = [line for line in out.splitlines() if line.startswith("failed: snli/dsan/seed0")]
    assert failed and "--embedding_dim=10 must be divisible by --num_heads=3." in failed[0]
    assert "(log: " + str(driver / "bad") in failed[0]
    assert out.splitlines()[-1].startswith("error: 1 of 1 runs failed")


def test_a_wrong_address_and_resources_no_node_has_are_one_sentence(cluster):
    """Nothing listens at the address: one sentence, exit 1 (Ray alone retried for
    minutes). --cpus_per_run above every node's CPUs: one sentence before any task (Ray
    alone waited for ever)."""
    address, driver, env, *_ = cluster
    wrong = f"127.0.0.1:{_free_port()}"
    status, out = _run(_study("--workdir=wrong", "--variants=cbow", f"--ray_address={wrong}"),
                       driver, env, timeout=120)
    assert status == 1 and out.splitlines()[-1].startswith(
        f"error: no Ray cluster answers at --ray_address={wrong} "), out[-2000:]
    status, out = _run(_study("--workdir=big", "--variants=cbow", f"--ray_address={address}",
                              "--cpus_per_run=2"), driver, env, timeout=120)
    assert status == 1, out[-2000:]
    assert out.splitlines()[-1] == (
        "error: --cpus_per_run=2 and --gpus_per_run=0: no node of the cluster has that much "
        "(its 2 node(s) have at most 1 CPUs and 0 GPUs); ask for less per run.")
    assert not (driver / "big" / "records").exists()


def test_an_input_a_node_cannot_read_is_refused_before_any_run(cluster):
    """The shared data in a folder the worker does not see: one sentence naming the file
    and the node, exit 1, no run started."""
    address, driver, env, root, _ = cluster
    _shared_data(root / "driver_only" / "shared")
    status, out = _run(_study("--workdir=unshared", "--variants=cbow",
                              f"--ray_address={address}",
                              f"--shared_data={root / 'driver_only' / 'shared'}"), driver, env)
    assert status == 1, out[-2000:]
    last = out.splitlines()[-1]
    assert last.startswith(f"error: {root / 'driver_only' / 'shared'}/"), last
    assert re.search(r" cannot be read there \(No such file or directory\): the node "
                     r"[\d.]+ does not share this machine's files; ", last), last
    assert "started on" not in out


def test_the_docs_sweep_gives_replicates_their_own_directories_and_seeds(cluster):
    """dsan-tune with relative data paths, a 1-value grid drawn twice: two trials, two run
    directories named by Tune's trial ids, two seeds, both trained on the worker."""
    address, driver, env, *_ = cluster
    status, out = _run([sys.executable, "-m", "dsan_tf.programs.tune", "--workdir=sweep",
                        "--model=cbow", "--embedding_dim=10", "--lowercase",
                        "--train_data=shared/snli/snli_1.0_train_25k.jsonl.gz",
                        "--dev_data=shared/snli/snli_1.0_dev.jsonl.gz",
                        "--embeddings=shared/glove/glove.6B.50d.top100k.txt.gz",
                        "--batch_size=16", "--epochs=2", "--nojit_compile",
                        "--search=learning_rate:grid:0.003", "--num_samples=2",
                        f"--ray_address={address}"], driver, env)
    assert status == 0, out[-4000:]
    rows = [line for line in out.splitlines() if re.match(r"\| \w+_0000[01]-learning_rate", line)]
    assert len(rows) == 2, out[-3000:]
    trials = sorted((driver / "sweep" / "trials").iterdir())
    assert len(trials) == 2 and trials[0].name != trials[1].name
    seeds = {json.loads((t / "config.json").read_text())["data"]["seed"] for t in trials}
    assert seeds == {0, 1}
    for trial in trials:
        assert (trial / "results.json").exists()
        config = json.loads((trial / "config.json").read_text())
        assert config["data"]["train_data"] == str(driver / "shared" / "snli" /
                                                   "snli_1.0_train_25k.jsonl.gz")
    assert f"TensorBoard: tensorboard --logdir {driver / 'sweep' / 'trials'}" in out


def test_a_ray_client_address_is_refused_in_one_sentence():
    """`ray://` would have the driver's folders on the client's machine and the runs' on the
    cluster's nodes: refused before anything connects, pointing at `ray job submit`."""
    from dsan_tf.common.errors import UsageError
    from dsan_tf.training import cluster

    with pytest.raises(UsageError) as refused:
        cluster.connect("ray://127.0.0.1:10001")
    said = str(refused.value)
    assert said.startswith("ray_address=ray://127.0.0.1:10001: Ray Client addresses are not "
                           "supported") and "`ray job submit --working-dir . -- COMMAND`" in said
    assert not ray.is_initialized()
