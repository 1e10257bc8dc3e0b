"""The GPU check's script, in-process at a tiny size on this machine's backend:
what it records and prints. The figures themselves come from a GPU (docs/PERFORMANCE.md)."""

import json
import pathlib

import pytest

from benchmarks import gpu_check

TINY = "embedding_dim=8,num_heads=2,ffn_dim=16,classifier_units=8"


def test_the_gpu_check_records_compile_and_two_epochs_and_projects_the_schedule(tmp_path,
                                                                                  capsys):
    output = tmp_path / "check.json"
    assert gpu_check.main([f"--output={output}", "--pairs=700", "--dev_pairs=130",
                           f"--size={TINY}"]) == 0
    record = json.loads(output.read_text())
    part = record["paper_epoch"]
    assert part["train_pairs"] == 700 and part["dev_pairs"] == 130
    assert [row["epoch"] for row in part["epochs"]] == [1, 2]
    ahead = part["compile_ahead"]
    assert ahead["train_shapes"] == sum(row["step"] == "train" for row in ahead["per_shape"])
    # The shapes were chosen for the preset's 20 epochs, and evaluation runs in them.
    assert part["batches"]["chosen"]["passes"] == pytest.approx(20.0)
    assert ahead["dev_shapes"] <= max(ahead["train_shapes"], 1) + 1
    seconds = [row["seconds"] for row in part["epochs"]]
    assert part["projected_schedule_seconds"] == pytest.approx(
        ahead["seconds"] + seconds[0] + 19 * seconds[1], abs=0.1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].endswith(f"part 1: compile ahead {ahead['seconds']:.1f} s, epochs "
                              f"{seconds[0]:.1f} s, {seconds[1]:.1f} s; 20 epochs projected "
                              f"{part['projected_schedule_seconds']:.0f} s")
    assert "study" not in record  # no --setting: part 2 skipped
    assert record["target_config"] is None  # XLA's description of a GPU; this is a CPU
    assert part["dtype_policy"] == "float32"  # the preset's precision


def test_mixed_precision_reaches_part_one_only(tmp_path, monkeypatch):
    """`--mixed_precision` is a field of part 1's configuration (the training program's
    flag of that name); part 2 keeps its setting's."""
    seen = []

    def paper_epoch(pairs, dev_pairs, fields, log):
        seen.append(fields)
        raise KeyboardInterrupt  # enough: the fields are what this test reads

    monkeypatch.setattr(gpu_check, "paper_epoch", paper_epoch)
    with pytest.raises(KeyboardInterrupt):
        gpu_check.main([f"--output={tmp_path / 'check.json'}", "--size=embedding_dim=8",
                        "--mixed_precision=mixed_bfloat16"])
    assert seen == [{"embedding_dim": 8, "mixed_precision": "mixed_bfloat16"}]


def test_the_study_part_trains_the_setting_and_prints_the_cpus_accuracy_beside(tmp_path):
    """... in the setting's precision (bfloat16 here), the caller's policy back after."""
    import keras

    setting = gpu_check.paper_setting(300, 60, {key: int(value) for key, value in (
        item.split("=") for item in TINY.split(","))} | {"mixed_precision": "mixed_bfloat16"},
        1)
    setting.save(tmp_path / "setting.npz")
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps({"runs": {"jax25k": {"dev_accuracy": 0.714, "best_epoch": 9}}}))
    lines = []
    record = gpu_check.study(tmp_path / "setting.npz", 1, cpu, lines.append)
    assert record["dtype_policy"] == "mixed_bfloat16"
    assert keras.config.dtype_policy().name == "float32"
    assert record["cpu"] == {"dev_accuracy": 0.714, "best_epoch": 9, "source": cpu}
    assert lines[-1] == (
        f"part 2: dev accuracy {record['dev_accuracy']:.4f} at epoch 1 (the CPU's JAX run: "
        f"0.7140 at epoch 9); compile ahead {record['compile_ahead']['seconds']:.1f} s, "
        f"median epoch {record['median_epoch_seconds']:.1f} s")


def test_the_gpu_sessions_script_runs_commands_these_programs_accept():
    """benchmarks/gpu_session.sh (the next GPU session's one call): every command it
    runs, printed by `DRY=1`, parses with its program's own flags, so a flag renamed
    here cannot cost a GPU session's minutes there; it measures what its header says."""
    import os
    import shlex
    import subprocess

    from benchmarks import shape_costs

    root = pathlib.Path(__file__).resolve().parents[1]
    printed = subprocess.run(["bash", "benchmarks/gpu_session.sh"], cwd=root,
                             env=dict(os.environ, DRY="1", OUT="/tmp/out"),
                             capture_output=True, text=True, timeout=60, check=True).stdout
    commands = [shlex.split(line) for line in printed.strip().splitlines()]
    parsers = {"benchmarks.shape_costs": shape_costs._parser(),
               "benchmarks.gpu_check": gpu_check._parser()}
    programs = []
    for words in commands:
        at = words.index("-m")
        program, args = words[at + 1], words[at + 2:]
        parsers[program].parse_args(args)  # exits (SystemExit) on a flag it lacks
        programs.append((program, [arg.split("=")[0] for arg in args]))
    scans = [args for program, args in programs if program == "benchmarks.shape_costs"]
    assert len(scans) == 7 and all("--scan_only" in args for args in scans)
    assert "--profile" in scans[0] and "--mixed_precision" in scans[1]
    assert [program for program, _ in programs].count("benchmarks.gpu_check") == 2
    assert any("--xla_gpu_dump_autotune_results_to=/tmp/out/autotune.txt" in word
               for word in commands[4])
    assert "96x48" in " ".join(commands[2])
