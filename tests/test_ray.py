"""Many runs on Ray (`dsan_tf.training.cluster`): the study's runs as Ray tasks on a local
Ray and on a 2-node cluster that loses a node mid-run, a folder a node cannot reach refused
in one sentence, a fraction of a GPU's memory per run, and `dsan-tune`'s sweep: stopped
early by ASHA, Ctrl-C'd and resumed, drawn by Optuna, a trial's own mistake not retried.
On a cluster started by `ray start`: tests/test_cluster.py. Ray is an optional extra
(requirements-ray.txt): these skip without it."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from dsan_tf.core import rundir
from helpers import ENV, ROOT, cli, ok

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -r "
                                        "requirements-ray.txt")
pytestmark = [pytest.mark.slow, pytest.mark.tensorflow, pytest.mark.usefixtures("ray_alone")]

DEMO = ["--model=cbow", "--embedding_dim=16", "--trainable_embeddings", "--dropout=0.3",
        "--train_data=synthetic:word_order/train", "--dev_data=synthetic:word_order/dev",
        "--embeddings=random", "--batch_size=32", "--max_length=32", "--bounded_shapes",
        "--nojit_compile", "--nocompile_ahead", "--learning_rate=3e-4"]


def _history(workdir):
    return [{k: v for k, v in row.items() if k != "seconds"}
            for row in rundir.read_history(os.path.join(workdir, "history.csv"))]


@pytest.fixture
def no_ray():
    yield
    if ray.is_initialized():
        ray.shutdown()


def test_the_study_on_a_local_ray_writes_the_records_of_one_by_one_runs(tmp_path, no_ray):
    """A local Ray of 2 CPUs, a run a CPU: DSAN's two seeds, CBOW and DSAN's ensemble
    (which waits on its members' tasks); each record equals that of the same run performed
    alone, outside Ray."""
    from experiments import results
    from test_results import TINY_CONFIG, _shared_data

    shared, records = tmp_path / "shared", tmp_path / "records"
    _shared_data(shared)
    config = tmp_path / "tiny.cfg"
    config.write_text(TINY_CONFIG)
    flags = [f"--workdir={tmp_path / 'runs'}", f"--shared_data={shared}", f"--config={config}",
             f"--record_dir={records}", "--variants=dsan", "--variants=cbow",
             "--variants=dsan_ensemble", "--max_seeds=2", "--nosick", "--curve_sizes=",
             f"--output={tmp_path / 'R.md'}", f"--json_output={tmp_path / 'r.json'}",
             f"--curve_output={tmp_path / 'c.png'}", f"--history_output={tmp_path / 'h.png'}"]
    done = subprocess.run([sys.executable, "-m", "experiments.results", *flags,
                           "--cpus_per_run=1"], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    for name in ("snli/dsan/seed0", "snli/dsan/seed1", "snli/cbow/seed0", "snli/cbow/seed1",
                 "snli/dsan_ensemble/seed0"):
        assert f"{name} done on " in out and f"{name} started on " in out, out[-3000:]
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert [row["variant"] for row in rows] == ["dsan", "cbow", "dsan_ensemble"]
    # The same run, alone, outside Ray: the same numbers.
    settings = results.Settings(str(tmp_path / "alone"), str(shared), str(config), "o", "j",
                                "c", results.config_digest(str(config)), max_seeds=2)
    variant = next(v for v in results.VARIANTS if v.key == "cbow")
    alone = results.perform(results.Run("snli", variant, 1), settings,
                            str(tmp_path / "alone_records"))
    on_ray = json.loads((records / "snli" / "cbow" / "seed1.json").read_text())
    for key in ("snli_dev_accuracy", "snli_dev_predictions", "multinli_accuracy",
                "best_epoch", "params"):
        assert on_ray[key] == alone[key], key
    assert [{k: v for k, v in row.items() if k != "seconds"} for row in on_ray["history"]] == \
        [{k: v for k, v in row.items() if k != "seconds"} for row in alone["history"]]


def test_a_node_lost_mid_run_is_retried_on_another_and_changes_no_number(tmp_path, no_ray):
    """A 2-node cluster on this machine: the run's task starts on node A; once an epoch is
    committed, node B joins and A is removed (its worker and the training it started die):
    Ray retries the task on B, which resumes the run directory and ends with the history
    of a run never interrupted."""
    from ray.cluster_utils import Cluster

    from dsan_tf.training import cluster as runs

    flags = [*DEMO, "--epochs=30", "--log_every_steps=5"]
    reference = tmp_path / "reference"
    ok(cli("train", f"--workdir={reference}", *flags))
    workdir = tmp_path / "run"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        first = cluster.add_node(num_cpus=1, resources={"node_a": 1})
        ray.init(address=cluster.address)
        command = [sys.executable, "-m", "dsan_tf.programs.train", f"--workdir={workdir}",
                   *flags]

        def train(log):
            return runs.run_program(command, log), runs.node_address()

        task = ray.remote(train).options(**runs.task_options(1, 0)).remote(
            str(tmp_path / "train.log"))
        cluster.add_node(num_cpus=1)  # B: free, for the retry (the task holds A's CPU)
        deadline = time.time() + 300
        while rundir.RunDirectory(str(workdir)).epochs_done() < 2:
            assert time.time() < deadline, (tmp_path / "train.log").read_text()[-2000:]
            time.sleep(0.1)
        cluster.remove_node(first, allow_graceful=False)
        lost_at = rundir.RunDirectory(str(workdir)).epochs_done()
        assert lost_at < 30
        error, node = ray.get(task, timeout=600)
        assert error is None, error
    finally:
        ray.shutdown()
        cluster.shutdown()
    # The retry resumed the run directory (its log is the retry's).
    assert "resuming " in (tmp_path / "train.log").read_text()
    assert _history(workdir) == _history(reference)
    assert json.loads((workdir / "results.json").read_text())["best_weights_sha256"] == \
        json.loads((reference / "results.json").read_text())["best_weights_sha256"]
    # No training process of the lost node outlived its task.
    assert rundir.RunDirectory(str(workdir)).holder() is None


def test_a_worker_killed_mid_run_leaves_no_training_behind_and_the_retry_resumes(
        tmp_path, no_ray):
    """SIGKILL of the Ray worker running a run (no clean-up of its own runs): the training
    process it started dies with it (the parent-death signal), so Ray's retry takes the
    run's lock and resumes it to the history of a run never interrupted."""
    from dsan_tf.training import cluster as runs

    flags = [*DEMO, "--epochs=30", "--log_every_steps=5"]
    reference, workdir = tmp_path / "reference", tmp_path / "run"
    ok(cli("train", f"--workdir={reference}", *flags))
    ray.init(num_cpus=1, include_dashboard=False)
    command = [sys.executable, "-m", "dsan_tf.programs.train", f"--workdir={workdir}", *flags]
    pid_file = tmp_path / "worker.pid"

    def train_and_say_pid(command, log, pid_file):  # a closure: pickled by value
        with open(pid_file, "w", encoding="utf-8") as stream:
            stream.write(str(os.getpid()))
        return runs.run_program(command, log)

    task = ray.remote(train_and_say_pid).options(**runs.task_options(1, 0)).remote(
        command, str(tmp_path / "train.log"), str(pid_file))
    deadline = time.time() + 300
    while rundir.RunDirectory(str(workdir)).epochs_done() < 2:
        assert time.time() < deadline and not ray.wait([task], timeout=0)[0], \
            ray.get(task) if ray.wait([task], timeout=0)[0] else "no epoch in 300 s"
        time.sleep(0.1)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert ray.get(task, timeout=600) is None
    assert "resuming " in (tmp_path / "train.log").read_text()
    assert _history(workdir) == _history(reference)


def test_a_folder_a_node_cannot_reach_is_refused_in_one_sentence(tmp_path, no_ray,
                                                                 monkeypatch):
    """A node whose file system differs (its own tmpfs over the study's folder, in a mount
    namespace): the probe finds it before any run starts."""
    if os.geteuid() != 0:
        pytest.skip("a node with its own mount namespace needs root (unshare, mount)")
    from ray.cluster_utils import Cluster

    # A head of this test's own (other tests' Ray on this machine untouched), and a node
    # joined with Ray's own `ray start`, without Ray's token (kept per machine).
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    env = dict(ENV, RAY_AUTH_MODE="disabled")
    shared = tmp_path / "study"
    shared.mkdir()
    head = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        worker = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             f"mount -t tmpfs tmpfs {shared} && exec ray start --address={head.address} "
             "--num-cpus=1 --block"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env, start_new_session=True)
        from dsan_tf.common.errors import UsageError
        from dsan_tf.training import cluster

        cluster.connect(head.address)
        deadline = time.time() + 120
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.time() < deadline, "the second node did not join"
            time.sleep(0.5)
        with pytest.raises(UsageError) as refused:
            cluster.check_nodes([str(shared)])
        said = str(refused.value)
        assert said.startswith(f"{shared} ") and "does not share this machine's files" in said
        assert said.count(". ") == 0 and said.endswith("(a shared file system, as NFS).")
    finally:
        ray.shutdown()
        if "worker" in locals():  # the node's processes: its session, no other Ray's
            os.killpg(worker.pid, signal.SIGKILL)
        head.shutdown()


def test_a_sweep_stops_trials_early_is_interrupted_resumed_and_finished(tmp_path):
    """dsan-tune with 4 demo trials over learning rates, 2 at a time: ASHA stops at least
    one before its last epoch; Ctrl-C mid-way ends it with its table (each trial's state),
    "interrupted" and 130, and the same command finishes it, each trial's history that of
    an uninterrupted run; every trial is a run directory that dsan-evaluate reads, and the
    table ends with the best trial's dsan-train command."""
    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "dsan_tf.programs.tune", f"--workdir={sweep}", *DEMO,
               "--epochs=4", "--search=learning_rate:grid:0.01,0.003,0.00001,0.000001",
               "--num_samples=1", "--grace_period=1", "--reduction_factor=2"]
    first = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 600
    trials = sweep / "trials"
    while not (trials.is_dir() and any(
            rundir.RunDirectory(str(p)).epochs_done() >= 2 for p in trials.iterdir())):
        assert first.poll() is None and time.time() < deadline, first.stdout.read()[-3000:]
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C: to the driver and the Ray it started
    said = first.communicate(timeout=300)[0]
    assert first.returncode == 130, said[-3000:]
    assert said.strip().splitlines()[-1] == "interrupted: the same command resumes the sweep."
    states = [line.rsplit("|", 2)[-2].strip() for line in said.splitlines()
              if re.match(r"\| \w+_\d+-learning_rate", line)]
    assert len(states) == 4 and "interrupted" in states, said[-3000:]
    assert "best: " not in said
    again = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stderr[-3000:] + again.stdout[-3000:]
    assert f"resuming the sweep in {sweep / 'tune'}" in again.stdout
    table = [line for line in again.stdout.splitlines()
             if re.match(r"\| \w+_\d+-learning_rate", line)]
    assert len(table) == 4
    accuracies = [float(line.split("|")[2]) for line in table]
    assert accuracies == sorted(accuracies, reverse=True)
    assert any("stopped early (ASHA)" in line for line in table)
    assert any("finished" in line for line in table)
    assert not any("interrupted" in line or "pending" in line for line in table)
    best = [line for line in again.stdout.splitlines() if line.startswith("best: ")][0]
    assert "train it again: dsan-train " in best and "--stop_after_epochs" not in best
    for folder in (p for p in trials.iterdir() if p.is_dir()):
        assert (folder / "config.json").exists() and (folder / "best.keras").exists()
        # The trial's own console, whole (its lines after the table are not printed).
        log = (folder / "train.log").read_text()
        assert "epoch 1/4: accuracy" in log and log.count("== started ") >= 1
    # The interrupted trials resumed to what an uninterrupted run of their values gives.
    finished = [p for p in trials.iterdir() if (p / "results.json").exists()]
    rate = finished[0].name.split("learning_rate=")[1]
    reference = tmp_path / "reference"
    ok(cli("train", f"--workdir={reference}", *DEMO, "--epochs=4", f"--learning_rate={rate}"))
    assert _history(finished[0]) == _history(reference)
    ok(cli("evaluate", f"--workdir={finished[0]}", "--data=synthetic:word_order/dev"))


def test_ray_without_an_address_starts_its_own_not_the_one_ray_start_left(tmp_path):
    """`--ray_address` left out starts a Ray of the study's own: a head that `ray start`
    left running on this machine (which `ray.init()` alone would join) is not joined."""
    import re
    import threading

    env = dict(ENV, RAY_AUTH_MODE="disabled")
    head = subprocess.Popen(["ray", "start", "--head", "--port=0", "--num-cpus=0", "--block",
                             "--include-dashboard=false"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        found = []

        def read():
            for line in head.stdout:
                match = re.search(r"--address='([^']+)'", line)
                if match and not found:
                    found.append(match.group(1))
        threading.Thread(target=read, daemon=True).start()
        deadline = time.time() + 120
        while not found:
            assert time.time() < deadline and head.poll() is None, "ray start did not start"
            time.sleep(0.2)
        probe = ("from dsan_tf.training import cluster\ncluster.connect()\nimport ray\n"
                 "print(ray.get_runtime_context().gcs_address)")
        done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] != found[0]
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # its session: no other Ray on this machine


def test_a_fraction_of_a_gpu_is_a_fraction_of_its_memory_in_each_run(no_ray):
    """--gpus_per_run=0.25: each run's process is told its share of the GPU's memory (JAX
    would preallocate 75% in each of four, TensorFlow all of it), by the job's runtime_env
    (a Ray of one declared GPU stands in for a GPU: Ray schedules by what is declared)."""
    from dsan_tf.training import cluster

    ray.init(address="local", num_cpus=1, num_gpus=1, include_dashboard=False,
             runtime_env=cluster.runtime_env(0.25))

    def environment():
        return {key: os.environ.get(key) for key in
                ("XLA_PYTHON_CLIENT_MEM_FRACTION", "TF_FORCE_GPU_ALLOW_GROWTH")}

    seen = ray.get(ray.remote(environment).options(
        **cluster.task_options(0.5, 0.25)).remote())
    assert seen == {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.225", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def test_optunas_tpe_draws_the_trials_and_draws_no_grid(tmp_path, no_ray):
    """--search_alg=optuna: Optuna's TPE (Ray Tune's OptunaSearch) draws the learning
    rates from their range, each trial a run directory; a grid it cannot draw is refused
    in one sentence before Ray starts."""
    sweep = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "dsan_tf.programs.tune", f"--workdir={sweep}", *DEMO,
         "--epochs=1", "--search=learning_rate:loguniform:1e-4:1e-2", "--num_samples=2",
         "--search_alg=optuna"], cwd=ROOT, env=ENV, capture_output=True, text=True,
        timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    trials = [p for p in (sweep / "trials").iterdir() if p.is_dir()]
    rates = sorted(json.loads((p / "config.json").read_text())["training"]["learning_rate"]
                   for p in trials)
    assert len(rates) == 2 and 1e-4 <= rates[0] < rates[-1] <= 1e-2
    # The searcher's state Tune keeps to resume it (the random draws keep none).
    assert list((sweep / "tune").glob("searcher-state-*.pkl"))
    refused = subprocess.run(
        [sys.executable, "-m", "dsan_tf.programs.tune", f"--workdir={tmp_path / 'grid'}",
         *DEMO, "--search=learning_rate:grid:0.01,0.001", "--search_alg=optuna"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: --search_alg=optuna draws no grid (--learning_rate): give those fields as "
        "FIELD:choice:V1,V2,... or use --search_alg=random.")


def test_a_trials_own_mistake_is_shown_not_retried_and_the_sweep_exits_1(tmp_path, no_ray):
    """A searched value that does not go with the others (4 heads of a 16-wide model fit,
    3 do not): that trial ends at once with its sentence in the table, Tune does not retry
    it (it ends TERMINATED, not ERROR after retries), the other trains, and the program
    exits 1 saying how many trials errored."""
    from ray.tune import ExperimentAnalysis

    sweep = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "dsan_tf.programs.tune", f"--workdir={sweep}", *DEMO,
         "--model=dsan", "--num_heads=4", "--epochs=1", "--search=num_heads:grid:3,4",
         "--num_samples=1"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:] + done.stdout[-3000:]
    rows = [line for line in done.stdout.splitlines() if re.match(r"\| \w+_\d+-num_heads", line)]
    errored = [row for row in rows if "num_heads=3 |" in row]
    assert len(rows) == 2 and errored[0].endswith(
        "| errored: embedding_dim=16 must be divisible by num_heads=3. |"), rows
    assert any(row.endswith("| finished |") for row in rows)
    assert done.stderr.strip().splitlines()[-1] == (
        "error: 1 of 2 trials errored (each one's first error line in the table above).")
    statuses = {t.config["num_heads"]: (t.status, t.num_failures)
                for t in ExperimentAnalysis(str(sweep / "tune")).trials}
    assert statuses[3] == ("TERMINATED", 0)
