r"""The GPU check: what the paper's schedule costs on this device, from a cold
start, in one command of at most 8 minutes on an H100/H200 (JAX, no TensorFlow needed).

    pip install --no-deps --target /tmp/site gpu-wheels/*.whl     # keras, optree, namex
    PYTHONPATH=/tmp/site:. KERAS_BACKEND=jax python -m benchmarks.gpu_check \
        --setting=settings/snli25k_glove50.npz --output=gpu_check.json

1. `paper_epoch`: the paper configuration (preset `dsan_snli`: d_e 300, 5 heads, d_ff 1200,
   batch 64) on a full SNLI epoch of random ids in SNLI's length profile (549,367 training
   pairs and 9,842 dev pairs drawn from records/runs/snli25k_lengths.json,
   `IdPairs.like_profile`): the shapes chosen for the device, the compile-ahead seconds,
   epoch 1 and epoch 2 (each with its dev pass), and the 20-epoch schedule they project.
2. `study`: the study's encoded setting (`dsan-encode-setting` of
   --config=snli25k_glove50) trained for its whole schedule
   (`dsan-train --setting`), its dev accuracy beside the CPU's record.

Nothing is read from JAX's compilation cache (a cold start). The record is rewritten
after each part, so a run cut short keeps what it measured. `--pairs` and `--size` shrink
part 1 for a check of the script on a CPU; `--mixed_precision=mixed_bfloat16` runs part 1
in bfloat16 (the training program's flag of that name).
"""

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time

import keras

from dsan_tf.core import rundir
from dsan_tf.core.config import PRECISIONS, ExperimentConfig, RunPolicy
from dsan_tf.data.batching import IdPairs
from dsan_tf.core.task import NLITask
from dsan_tf.training import driver
from dsan_tf.training.setting import EncodedSetting
from benchmarks import backends, program_size
from benchmarks.benchmark import LENGTH_PROFILE, SNLI_TRAIN_PAIRS
from benchmarks.program_size import VOCAB_SIZE

SNLI_DEV_PAIRS = 9_842
PAPER_EPOCHS = 20  # the schedule part 1 projects (the preset's epochs)


def train(setting, epochs=None, patience=None, stop_after_epochs=0):
    """Trains `setting` as `dsan-train --setting` does (`train_run`, in a temporary run
    directory), `epochs` and `patience` over its configuration's, the first
    `stop_after_epochs` only where given; returns what the run measured: backend, device,
    dtype policy, batches, compile-ahead, the epochs (seconds, metrics), the best epoch and
    its dev accuracy, and the median epoch's seconds (its dev pass included). The caller's
    Keras dtype policy is put back after (the run sets its configuration's)."""
    training = setting.config.training
    config = dataclasses.replace(setting.config, training=dataclasses.replace(
        training, epochs=epochs or training.epochs,
        patience=training.patience if patience is None else patience))
    policy = setting.policy
    outer = keras.config.dtype_policy()
    try:
        with tempfile.TemporaryDirectory() as workdir:
            outcome = driver.train_run(workdir, NLITask(config, policy), setting=setting,
                                       stop_after_epochs=stop_after_epochs)
            history = rundir.read_history(os.path.join(workdir, rundir.HISTORY))
        precision = keras.config.dtype_policy().name
    finally:
        keras.config.set_dtype_policy(outer)
    results = outcome.results
    best = max(history, key=lambda row: row["val_accuracy"])  # the first of the highest
    return {"backend": keras.backend.backend(), "device": backends.info()["device"],
            "dtype_policy": precision, "train_pairs": len(setting.splits["train"]),
            "dev_pairs": len(setting.splits["dev"]),
            "batches": results.get("batch_shapes"), "compile_ahead": results["compiled_ahead"],
            "epochs": history, "best_epoch": best["epoch"],
            "dev_accuracy": results.get("dev_accuracy", best["val_accuracy"]),
            "median_epoch_seconds": statistics.median(row["seconds"] for row in history)}


def paper_setting(pairs, dev_pairs, fields, epochs):
    """An `EncodedSetting` of the `dsan_snli` preset on random ids of SNLI's lengths."""
    config = ExperimentConfig.named("dsan_snli", epochs=epochs, patience=0, **fields)
    with open(LENGTH_PROFILE, encoding="utf-8") as stream:
        profile = json.load(stream)
    splits = {"train": IdPairs.like_profile(profile, pairs, 0, VOCAB_SIZE),
              "dev": IdPairs.like_profile(profile, dev_pairs, 1, VOCAB_SIZE)}
    return EncodedSetting(config, RunPolicy(bounded_shapes=True, compilation_cache=False),
                          splits, None, [f"w{i}" for i in range(VOCAB_SIZE - 2)])


def paper_epoch(pairs, dev_pairs, fields, log):
    """Part 1: {shapes, compile_ahead, epochs, projected schedule seconds}."""
    # The shapes are chosen for the preset's whole schedule; 2 of its epochs are timed.
    setting = paper_setting(pairs, dev_pairs, fields, PAPER_EPOCHS)
    record = train(setting, patience=0, stop_after_epochs=2)
    epochs = [row["seconds"] for row in record["epochs"]]
    record["projected_schedule_seconds"] = round(
        record["compile_ahead"]["seconds"] + epochs[0] + (PAPER_EPOCHS - 1) * epochs[-1], 1)
    return record


def study(path, epochs, cpu_record, log):
    """Part 2: the record of the study's configuration trained (`train`), the CPU's run
    beside it."""
    setting = EncodedSetting.load(path)
    setting.policy = dataclasses.replace(setting.policy, compilation_cache=False)
    record = train(setting, epochs=epochs)
    try:
        with open(cpu_record, encoding="utf-8") as stream:
            cpu = json.load(stream)["runs"]["jax25k"]
        record["cpu"] = {"dev_accuracy": cpu["dev_accuracy"], "best_epoch": cpu["best_epoch"],
                         "source": cpu_record}
    except (OSError, KeyError, ValueError):
        cpu = None
    log(f"part 2: dev accuracy {record['dev_accuracy']:.4f} at epoch {record['best_epoch']}"
        + (f" (the CPU's JAX run: {cpu['dev_accuracy']:.4f} at epoch {cpu['best_epoch']})"
           if cpu else "")
        + f"; compile ahead {record['compile_ahead']['seconds']:.1f} s, median epoch "
        f"{record['median_epoch_seconds']:.1f} s")
    return record


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", help="the study's encoded setting (.npz); "
                        "without it part 2 is skipped")
    parser.add_argument("--output", required=True, help="write the record here (JSON)")
    parser.add_argument("--pairs", type=int, default=SNLI_TRAIN_PAIRS)
    parser.add_argument("--dev_pairs", type=int, default=SNLI_DEV_PAIRS)
    parser.add_argument("--size", default="", help="model fields over the preset, e.g. "
                        "embedding_dim=16,num_heads=2,ffn_dim=32 (a quick check)")
    parser.add_argument("--study_epochs", type=int, help="at most this many epochs of "
                        "part 2 (default: its schedule)")
    parser.add_argument("--cpu_record", default="records/runs/jax_road_25k.json",
                        help="the CPU's run of the study's configuration, to print beside")
    parser.add_argument("--mixed_precision", default="none", choices=PRECISIONS,
                        help="part 1's precision (the preset's: none, float32); part 2 "
                        "keeps its setting's")
    return parser


def main(argv=None):
    return _check(_parser().parse_args(argv))


def _check(args):
    """The two parts, each written to `args.output` as it ends."""
    fields = {key: int(value) for key, value in
              (item.split("=") for item in args.size.split(",") if item)}
    if args.mixed_precision != "none":
        fields["mixed_precision"] = args.mixed_precision
    started = time.perf_counter()
    # XLA's description of this GPU: deviceless compiles of its programs elsewhere
    # (`benchmarks.program_size --gpu_kernels --target=RECORD`); None on a CPU.
    record = {"command": " ".join(sys.argv), "target_config": program_size.device_target(),
              "xla_flags": os.environ.get("XLA_FLAGS", "")}

    def log(line):
        print(f"[{time.perf_counter() - started:6.1f} s] {line}", flush=True)

    def save():
        record["seconds"] = round(time.perf_counter() - started, 1)
        with open(args.output, "w", encoding="utf-8") as stream:
            json.dump(record, stream, indent=1)

    log(f"part 1: dsan_snli on {args.pairs:,} pairs of SNLI's lengths, 2 epochs")
    record["paper_epoch"] = paper_epoch(args.pairs, args.dev_pairs, fields, log)
    part = record["paper_epoch"]
    log(f"part 1: compile ahead {part['compile_ahead']['seconds']:.1f} s, epochs "
        + ", ".join(f"{row['seconds']:.1f} s" for row in part["epochs"])
        + f"; {PAPER_EPOCHS} epochs projected {part['projected_schedule_seconds']:.0f} s")
    save()
    if args.setting:
        log(f"part 2: the encoded study setting {args.setting}, its whole schedule")
        record["study"] = study(args.setting, args.study_epochs, args.cpu_record, log)
        save()
    log(f"done in {time.perf_counter() - started:.0f} s")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
