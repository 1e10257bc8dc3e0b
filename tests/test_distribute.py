"""tf.distribute: the same training on one device, on two mirrored CPU replicas and on two
gRPC workers on 127.0.0.1 (real processes), with --batch_size as the global batch."""

import csv
import json
import os
import socket
import subprocess
import sys

import pytest

from helpers import ROOT, cli, ok

# Few steps of the demo (trainable embeddings, so the gradients include sparse ones);
# no dropout and no shuffle (tf.distribute reorders a seeded shuffle), so that the runs
# differ only in how the global batch is split.
SHORT = ("--config=demo", "--epochs=2", "--steps_per_epoch=4",
         "--dropout=0", "--noshuffle")


def losses(workdir):
    with open(os.path.join(workdir, "history.csv")) as stream:
        return [float(row["loss"]) for row in csv.DictReader(stream)]


def results(workdir):
    with open(os.path.join(workdir, "results.json")) as stream:
        return json.load(stream)


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("single")
    ok(cli("train", *SHORT, f"--workdir={workdir}"))
    return workdir


@pytest.mark.slow
def test_mirrored_replicas_match_one_device(single, tmp_path):
    stdout = ok(cli("train", *SHORT, f"--workdir={tmp_path}",
                    "--strategy=mirrored", "--logical_cpus=2"))
    assert "2 replica(s), 16 pairs each per step" in stdout
    assert losses(tmp_path) == pytest.approx(losses(single), rel=1e-4)
    assert results(tmp_path)["dev_accuracy"] == pytest.approx(
        results(single)["dev_accuracy"], abs=0.02)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_two_workers_on_loopback_train_and_agree(single, tmp_path):
    cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    workers = [subprocess.Popen(
        [sys.executable, "-m", "dsan_tf.programs.train", *SHORT, f"--workdir={tmp_path}",
         "--strategy=multi_worker"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=dict(env, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}))) for index in (0, 1)]
    try:
        outputs = [worker.communicate(timeout=420)[0] for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-3000:]
    assert "2 replica(s)" in outputs[0]
    chief, other = results(tmp_path), results(tmp_path / "worker1")
    assert chief["best_weights_sha256"] == other["best_weights_sha256"]
    # The global batch is split, not repeated: the same losses as on one device.
    assert losses(tmp_path) == pytest.approx(losses(single), rel=1e-3)
    assert os.path.isdir(tmp_path / "tensorboard" / "train")


def test_strategy_mistakes_get_one_sentence(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    result = subprocess.run(
        [sys.executable, "-m", "dsan_tf.programs.train", *SHORT, f"--workdir={tmp_path}",
         "--strategy=multi_worker"], cwd=ROOT, capture_output=True, text=True, env=env,
        timeout=300)
    assert result.returncode != 0 and "needs the TF_CONFIG environment variable" in result.stderr
    result = cli("train", *SHORT, f"--workdir={tmp_path}", "--strategy=mirrored",
                 "--logical_cpus=2", "--batch_size=33")
    assert result.returncode != 0
    assert "--batch_size=33 (the global batch) is not divisible by the 2 replicas" in result.stderr
    assert "Traceback" not in result.stderr
