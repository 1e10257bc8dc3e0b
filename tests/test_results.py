"""`experiments.results`: one command regenerates docs/RESULTS.md, and every row means what it says."""

import gzip
import json
import os

import numpy as np
import pytest

from helpers import ROOT, cli, ok

from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import train
from experiments import results

WORDS = ("a man woman dog cat sleeps runs eats rests sits is not the person animal "
         "outside inside").split()


def _sentence(rng):
    return " ".join(rng.choice(WORDS, size=rng.integers(3, 7)))


TINY_CONFIG = """--lowercase
--notrainable_embeddings
--embedding_dim=10
--num_heads=2
--ffn_dim=20
--classifier_units=16
--batch_size=16
--epochs=2
--seed=0
"""


def _shared_data(root):
    """A miniature ../shared/data: the same file names and formats, a few dozen pairs each."""
    rng = np.random.default_rng(0)
    labels = ("entailment", "neutral", "contradiction")
    for spec in [results.MULTINLI, *results.SNLI.values()]:
        path = root / spec
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            for i in range(48):
                stream.write(json.dumps({"sentence1": _sentence(rng), "sentence2": _sentence(rng),
                                         "gold_label": labels[i % 3]}) + "\n")
    for spec in results.SICK.values():
        path = root / spec
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        lines += [f"{i}\t{_sentence(rng)}\t{_sentence(rng)}\t3.0\t{labels[i % 3].upper()}"
                  for i in range(48)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    glove = root / results.GLOVE
    glove.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(glove, "wt", encoding="utf-8") as stream:
        stream.write("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=10))}\n"
                             for w in WORDS))


def test_every_row_trains_a_different_model():
    """A variant whose flags were silently ignored would repeat the paper row under another
    name: no two rows train the same model the same way (kept rows aside: older code made
    them, and `gaussian_transformer_cut` shares its flags with `gaussian_transformer`)."""
    seen = {}
    train.define_flags()  # the rows' flags are dsan-train's
    try:
        for variant in results.VARIANTS:
            if variant.ensemble_of or variant.kept:  # trains nothing now
                continue
            project_flags.FLAGS.unparse_flags()
            project_flags.FLAGS(["results", f"--flagfile={ROOT / results.CONFIG_FILE}",
                                 *variant.flags])
            experiment = project_flags.experiment_config()
            described = (project_flags.FLAGS.model, project_flags.model_config(vocab_size=10),
                         experiment.training, experiment.data.batching)
            assert described not in seen.values(), f"{variant.key} trains the same model as another row"
            seen[variant.key] = described
    finally:
        project_flags.FLAGS.unparse_flags()
    assert seen["dsan"][1].distance_prior == "linear" and seen["dsan"][1].distance_alpha == 1.5
    assert seen["dsan"][1].embedding_dim == 50 and seen["dsan"][1].qkv_norm == "per_head"
    # SAN4NLI's row is its preset: every departure on, and nothing else changed.
    from dsan_tf.core.config import ExperimentConfig

    preset = ExperimentConfig.named("san4nli", vocab_size=10)
    assert seen["san4nli"][1] == preset.model_config and seen["san4nli"][3] == "plain"
    assert seen["san4nli"][2] == preset.training
    # The row that the small-data preset rests on is that preset.
    small = ExperimentConfig.named("san4nli_paper_classifier", vocab_size=10)
    assert seen["san4nli_without_classifier_units"][1:] == (
        small.model_config, small.training, "plain")
    assert small.model_config.classifier_units == 300


def test_plan_has_three_seeds_where_the_issue_asks_and_the_first_seeds_first():
    runs = results.plan(results.VARIANTS, 3, [5500, 12500], sick=True)
    seeds = {}
    for run in runs:
        if run.task == "snli":
            seeds.setdefault(run.variant.key, []).append(run.seed)
    for key in ("dsan", "prior_none", "disan", "cbow"):
        assert seeds[key] == [0, 1, 2], key
    assert all(len(s) >= 1 for s in seeds.values()) and len(seeds) == len(results.VARIANTS)
    early = [v for v in results.VARIANTS if not v.last and not v.ensemble_of]
    first = runs[:len(early)]
    assert [run.seed for run in first] == [0] * len(early)  # a partial study has every row
    # The costly rows last: each one's seed 0, then the further seeds of those that have them.
    late = [v.key for v in results.VARIANTS if v.last]
    more = [(v.key, seed) for v in results.VARIANTS if v.last for seed in (1, 2)[:v.seeds - 1]]
    tail = [(run.variant.key, run.seed) for run in runs[-len(late) - len(more):]]
    assert late and more and tail == [(key, 0) for key in late] + more
    assert seeds["san4nli_without_classifier_units"] == [0, 1, 2]
    ensemble = [i for i, run in enumerate(runs) if run.variant.ensemble_of]
    members = [i for i, run in enumerate(runs)
               if run.variant.key == "dsan" and run.task == "snli"]
    assert ensemble and min(ensemble) > max(members)  # after the seeds it averages
    assert {run.task for run in runs} == {"snli", "sick", "curve5500", "curve12500"}
    assert len(set(runs)) == len(runs)


@pytest.mark.slow
def test_study_is_written_resumed_and_reproducible(tmp_path, ray_alone):
    shared, workdir, records = tmp_path / "shared", tmp_path / "runs", tmp_path / "records"
    _shared_data(shared)
    config = tmp_path / "tiny.cfg"
    config.write_text(TINY_CONFIG)
    outputs = {"output": tmp_path / "RESULTS.md", "json_output": tmp_path / "results.json",
               "curve_output": tmp_path / "curve.png",
               "history_output": tmp_path / "training_curves.png"}
    flags = [f"--workdir={workdir}", f"--shared_data={shared}", f"--config={config}",
             f"--record_dir={records}", "--variants=dsan", "--variants=cbow",
             "--variants=dsan_ensemble", "--max_seeds=2",
             "--curve_sizes=24", *[f"--{k}={v}" for k, v in outputs.items()]]
    pytest.importorskip("ray", reason="the study runs on Ray: pip install -r "
                                      "requirements-ray.txt")
    import ray

    # A run a CPU on a local Ray: the ensemble's task waits for DSAN's seeds'.
    try:
        ok(cli("results", *flags, "--cpus_per_run=1"))
    finally:
        ray.shutdown()
    rows = json.loads(outputs["json_output"].read_text())["rows"]
    assert [r["variant"] for r in rows] == ["dsan", "cbow", "dsan_ensemble"]
    ensemble = rows.pop()  # the mean probabilities of DSAN's two seeds: no training of its own
    assert ensemble["seeds"] == [0] and 0 <= ensemble["snli_dev_mean"] <= 1
    assert ensemble["params"] == 2 * rows[0]["params"] and 0 < ensemble["p_value_vs_dsan"] <= 1
    record = json.loads((records / "snli" / "dsan_ensemble" / "seed0.json").read_text())
    assert record["member_seeds"] == [0, 1] and len(record["snli_dev_predictions"]) == 48
    for r in rows:
        assert r["seeds"] == [0, 1] and len(r["snli_dev"]) == 2
        assert 0 <= r["snli_dev_mean"] <= 1 and r["snli_dev_sd"] is not None
        assert 0 <= r["multinli_m_mean"] <= 1 and 0 <= r["sick_test_mean"] <= 1
        assert r["params"] > 0
    assert rows[0]["p_value_vs_dsan"] is None and 0 < rows[1]["p_value_vs_dsan"] <= 1
    assert outputs["curve_output"].read_bytes().startswith(b"\x89PNG")
    text = outputs["output"].read_text()
    assert "| DSAN (paper" in text and "24 pairs" in text and "25,299 pairs" in text
    assert "dsan-evaluate" in text and "--save_predictions" in text
    assert "- 2 epochs, the best dev epoch kept instead of the paper's unstated schedule." in text
    record = json.loads((records / "snli" / "cbow" / "seed1.json").read_text())
    assert len(record["snli_dev_predictions"]) == 48 and record["seed"] == 1
    # Which code and CPU made it: numerics differ between CPUs and commits.
    from benchmarks import machine
    assert record["made_by"]["git_commit"] == machine.describe()["git_commit"]
    assert record["made_by"]["cpu_model"] == machine.cpu_model()[0]
    assert outputs["history_output"].read_bytes().startswith(b"\x89PNG")
    # Every record keeps its per-epoch history, with the steps and learning rate.
    history = record["history"]
    assert len(history) == record["epochs"] and history[0]["epoch"] == 1
    assert [row["steps"] for row in history] == sorted({row["steps"] for row in history})
    for key in ("loss", "accuracy", "val_accuracy", "learning_rate", "seconds"):
        assert all(key in row for row in history), key

    # Resumed elsewhere: the records alone rebuild the same table, without training again.
    (tmp_path / "runs").rename(tmp_path / "old_runs")
    ok(cli("results", *flags))
    assert not workdir.exists() or not any(workdir.rglob("train.log"))
    assert json.loads(outputs["json_output"].read_text())["rows"] == rows + [ensemble]
    outputs["json_output"].unlink()
    ok(cli("results", *flags, "--report_only"))
    assert json.loads(outputs["json_output"].read_text())["rows"] == rows + [ensemble]


@pytest.mark.parametrize("flags, message", [
    (["--variants=transformer"], "unknown --variants ['transformer']"),
    (["--shared_data=/nonexistent"], "point --shared_data at the shared data directory"),
])
def test_mistakes_get_one_sentence(tmp_path, flags, message):
    if "unknown" in message and not (ROOT.parent / "shared" / "data").exists():
        pytest.skip("../shared/data is absent")
    result = cli("results", f"--workdir={tmp_path}", "--shared_data=../shared/data", *flags)
    assert result.returncode != 0 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_records_of_another_configuration_are_not_reused(tmp_path):
    """Resuming after the configuration changed must train again, not mix old and new runs
    in one table; editing the flagfile's comments changes nothing."""
    from experiments import results

    config = tmp_path / "a.cfg"
    config.write_text("# setting\n--epochs=3\n--batching=plain\n")
    digest = results.config_digest(config)
    config.write_text("# another comment\n\n--epochs=3\n  --batching=plain\n")
    assert results.config_digest(config) == digest
    config.write_text("--epochs=3\n--batching=sorted_chunks\n")
    assert results.config_digest(config) != digest
    record = tmp_path / "seed0.json"
    record.write_text(json.dumps({"run": "snli/dsan/seed0", "config_digest": digest}))
    assert results.current_record(record, digest)["run"] == "snli/dsan/seed0"
    assert results.current_record(record, results.config_digest(config)) is None
    assert results.current_record(tmp_path / "absent.json", digest) is None


def test_resources_a_run_cannot_have_are_one_sentence_before_ray_starts(tmp_path):
    result = cli("results", f"--workdir={tmp_path}", "--shared_data=../shared/data",
                 "--cpus_per_run=0", f"--output={tmp_path / 'r.md'}")
    if not (ROOT.parent / "shared" / "data").exists():
        pytest.skip("../shared/data is absent")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "error: --cpus_per_run=0.0, --gpus_per_run=0.0: a run needs a positive number of "
        "CPUs and no negative number of GPUs.")


def test_seconds_per_epoch_compare_only_runs_that_had_every_core():
    from experiments import study_report

    def record(variant, seed, seconds, cores):
        return {"task": "snli", "variant": variant, "seed": seed, "seconds_per_epoch": seconds,
                "cores": cores, "machine_cores": 2, "snli_dev_accuracy": 0.5, "multinli_accuracy": 0.4,
                "params": 1, "best_epoch": 1, "snli_dev_predictions": "0",
                "snli_dev_labels": "0"}

    records = {"a0": record("dsan", 0, 30.0, 2), "a1": record("dsan", 1, 50.0, 1),
               "b1": record("cbow", 1, 12.0, 1), "c0": record("raw_fusion", 0, 20.0, 1)}
    del records["c0"]["cores"], records["c0"]["machine_cores"]  # made before the fields
    dsan, cbow, old = [study_report.row(v, records) for v in results.VARIANTS
                       if v.key in ("dsan", "cbow", "raw_fusion")]
    assert dsan["seconds_per_epoch"] == 30.0 and not dsan["seconds_on_fewer_cores"]
    assert old["seconds_per_epoch"] == 20.0 and not old["seconds_on_fewer_cores"]
    assert cbow["seconds_per_epoch"] == 12.0 and cbow["seconds_on_fewer_cores"]
    lines = study_report.table_lines([dsan, cbow])
    assert "| 30 |" in lines[2] and "| 12† |" in lines[3]


def test_a_rows_accuracy_is_the_mean_and_sample_sd_of_its_seeds(tmp_path):
    """71.2 ± 0.5 in the table: the mean of the seeds' SNLI dev accuracies and their sample
    standard deviation (n − 1), as the text above the table says."""
    from experiments import study_report

    accuracies = (0.707, 0.714, 0.716)
    records = {f"s{seed}": {"task": "snli", "variant": "dsan", "seed": seed,
                            "seconds_per_epoch": 30.0, "snli_dev_accuracy": accuracy,
                            "multinli_accuracy": 0.46, "params": 1, "best_epoch": 1,
                            "snli_dev_predictions": "0", "snli_dev_labels": "0"}
               for seed, accuracy in enumerate(accuracies)}
    dsan = study_report.row(next(v for v in results.VARIANTS if v.key == "dsan"), records)
    mean = sum(accuracies) / 3
    sd = (sum((a - mean) ** 2 for a in accuracies) / 2) ** 0.5
    assert dsan["snli_dev_mean"] == pytest.approx(mean) and dsan["snli_dev_sd"] == pytest.approx(sd)
    assert "| 71.2 ± 0.5 |" in study_report.table_lines([dsan])[2]
    # The outputs' folders are made when missing (no traceback for a new --output path).
    out = tmp_path / "new" / "folder"
    settings = results.Settings(str(tmp_path), "../shared/data", results.CONFIG_FILE,
                                str(out / "RESULTS.md"), str(out / "results.json"),
                                str(out / "curve.png"), "digest")
    study_report.write(records, [v for v in results.VARIANTS if v.key == "dsan"], [], settings,
                       0.0)
    assert json.loads((out / "results.json").read_text())["rows"][0]["snli_dev"] == list(
        accuracies)
    # What differs from the paper names the study flagfile's schedule.
    assert ("- early stopping (patience 3, at most 30 epochs) instead of the paper's unstated "
            "schedule.") in (out / "RESULTS.md").read_text().splitlines()


def test_training_curves_draw_train_and_dev_accuracy_and_the_rate_against_steps():
    from dsan_tf.evaluation import plots

    histories = {
        "dsan": [{"steps": 396 * (e + 1), "accuracy": 0.5 + 0.1 * e,
                  "val_accuracy": 0.5 + 0.05 * e, "learning_rate": 1e-3} for e in range(3)],
        "afdmn": [{"steps": 396 * (e + 1), "accuracy": 0.4, "val_accuracy": 0.41,
                   "learning_rate": 2e-4 / 2 ** e} for e in range(2)]}
    figure = plots.training_curves(histories, "title")
    top, bottom = figure.axes
    lines = top.get_lines()
    assert len(lines) == 4 and len(bottom.get_lines()) == 2
    assert list(lines[0].get_xdata()) == [396, 792, 1188]
    assert list(lines[0].get_ydata()) == pytest.approx([50, 60, 70])      # train, solid
    assert list(lines[1].get_ydata()) == pytest.approx([50, 55, 60])      # dev, dashed
    assert lines[1].get_linestyle() == "--" and lines[0].get_color() == lines[1].get_color()
    assert list(bottom.get_lines()[1].get_ydata()) == pytest.approx([2e-4, 1e-4])
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["dsan", "afdmn"]


def test_a_row_that_changes_another_is_compared_with_it():
    """A leave-one-out row of SAN4NLI's model is tested against that model, not only DSAN:
    its Δ is the difference of mean accuracy to the `against` row's seeds, and McNemar pairs
    seed 0 with seed 0."""
    from experiments import study_report

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=400)

    def record(variant, seed, right):
        predictions = np.where(np.arange(400) < right, labels, (labels + 1) % 3)
        return {"task": "snli", "variant": variant, "seed": seed, "seconds_per_epoch": 30.0,
                "snli_dev_accuracy": right / 400, "multinli_accuracy": 0.5, "params": 1,
                "best_epoch": 1, "snli_dev_labels": "".join(map(str, labels)),
                "snli_dev_predictions": "".join(map(str, predictions))}

    records = {f"{v}{seed}": record(v, seed, right) for v, seed, right in [
        ("dsan", 0, 280), ("dsan", 1, 284), ("dsan", 2, 288),
        ("san4nli", 0, 300), ("san4nli", 1, 296), ("san4nli", 2, 304),
        ("san4nli_without_initialization", 0, 260)]}
    variant = next(v for v in results.VARIANTS if v.key == "san4nli_without_initialization")
    assert variant.against == ("san4nli",) and "--initialization=san4nli" not in variant.flags
    assert len(variant.flags) == len(results.config_flags("san4nli")) - 1
    r = study_report.row(variant, records)
    (against,) = r["against"]
    assert against["variant"] == "san4nli" and against["seeds"] == [0, 1, 2]
    assert against["difference"] == pytest.approx((260 - 300) / 400)
    assert r["difference_vs_dsan"] == pytest.approx((260 - 284) / 400)
    low, high = against["difference_ci"]
    assert low <= -0.1 <= high and against["p_value"] < 0.001
    # Seed 0 is wrong on pairs 260-299 where SAN4NLI's seed 0 is right, and never the reverse.
    assert against["p_value_mcnemar_seed0"] == pytest.approx(2 * 0.5 ** 40)
    rows = [study_report.row(v, records) for v in results.VARIANTS
            if v.key in ("dsan", "san4nli", variant.key, "dsan_all_epochs")]
    lines = study_report.against_lines(rows)
    # One line per row it is compared with; a row not yet trained (dsan_all_epochs) is left
    # to the main table.
    assert len(lines) == 6 and lines[4].startswith("| SAN4NLI's model less one departure")
    assert "| 65.0 | `san4nli` | 75.0 ± 1.0 | -10.0 [" in lines[4]
    # One seed against three: no test over the seeds.
    assert lines[4].endswith("| < 0.001 | < 0.001 | – |")
    # Three seeds against three: Welch's t-test of 75.0 ± 1.0 against 71.0 ± 1.0 (SciPy's
    # ttest_ind(equal_var=False): 0.008049893100837719).
    san4nli = study_report.row(next(v for v in results.VARIANTS if v.key == "san4nli"), records)
    assert san4nli["p_value_seeds_vs_dsan"] == pytest.approx(0.008049893100837719, abs=1e-12)
    assert study_report.table_lines([san4nli])[2].endswith("| 0.008 |")
    records["d0"] = record("dsan_all_epochs", 0, 292)
    lines = study_report.against_lines([study_report.row(v, records) for v in results.VARIANTS
                                        if v.key in ("dsan", "san4nli", variant.key,
                                                     "dsan_all_epochs")])
    assert len(lines) == 7 and lines[4].startswith("| DSAN trained as SAN4NLI's train.py")
    assert "| 73.0 | `dsan` | 71.0 ± 1.0 | +2.0 [" in lines[4]


def test_a_run_without_early_stopping_is_also_read_as_early_stopping_would_have_ended_it():
    """The 20-epoch rows: the study's early stopping (patience 3), replayed on the run's own
    history, keeps the best epoch before the first 3 without a strict rise."""
    from experiments import study_report

    dev = [0.60, 0.65, 0.70, 0.70, 0.69, 0.70, 0.72, 0.71, 0.74, 0.73]
    history = [{"val_accuracy": a} for a in dev]
    # Epoch 4's 0.70 is no rise: 4, 5 and 6 pass without one, so training stops at 6.
    assert study_report.early_stopped(history, patience=3) == (3, 0.70, 6)
    assert study_report.early_stopped(history, patience=5) == (9, 0.74, 10)
    record = {"task": "snli", "variant": "san4nli_all_epochs", "seed": 1, "history": history}
    variant = next(v for v in results.VARIANTS if v.key == "san4nli_all_epochs")
    lines = study_report.selection_lines([variant], {"r": record}, patience=3)
    assert lines[0].startswith("Best dev epoch of all against the study's early stopping "
                               "(patience 3)")
    assert lines[-2] == "| `san4nli_all_epochs` | 1 | 74.00 (9 of 10) | 70.00 (3, stopped at 6) | +4.00 |"
    lines = study_report.selection_lines([variant], {"r": record}, patience=5)
    assert lines[-2] == "| `san4nli_all_epochs` | 1 | 74.00 (9 of 10) | 74.00 (9, stopped at 10) | +0.00 |"
    assert study_report.selection_lines([v for v in results.VARIANTS if v.key == "dsan"],
                                        {"r": dict(record, variant="dsan")}, patience=3) == []


def test_the_report_reads_its_early_stopping_from_the_study_flagfile(tmp_path):
    """The patience that the report states and replays is the study's --config's, not a
    number written again in the report's code; a flagfile without it gets the training
    configuration's defaults (no early stopping, 20 epochs)."""
    from experiments import study_report

    assert study_report.schedule(results.CONFIG_FILE) == (3, 30)
    config = tmp_path / "study.cfg"
    config.write_text("# --patience=9 in a comment counts for nothing\n--patience=5\n"
                      "--epochs=12\n--patience=4\n")
    assert study_report.schedule(str(config)) == (4, 12)
    config.write_text("--embedding_dim=50\n")
    assert study_report.schedule(str(config)) == (0, 20)


def test_a_new_family_gets_a_row_from_its_folder(monkeypatch):
    """A family that no row trains joins the study through a named
    configuration of the study's configuration in its folder; the project's own families, which
    have rows, get none twice, and other configurations add nothing."""
    from dsan_tf.models import registry

    assert [row.key for row in results.family_rows(results.VARIANTS)] == []
    known = registry.named_configs()
    path = os.path.join(ROOT, "dsan_tf", "models", "maxbow", "configs",
                        "maxbow_snli25k_glove50.cfg")
    monkeypatch.setattr(registry, "named_configs", lambda: {
        **known,
        "maxbow_snli25k_glove50": registry.NamedConfig(
            "maxbow_snli25k_glove50", "maxbow", path, "A BiLSTM with max pooling.",
            "snli25k_glove50", {"model": "maxbow"}),
        "maxbow_paper": registry.NamedConfig("maxbow_paper", "maxbow", path, "Its paper.",
                                             None, {"model": "maxbow"})})
    rows = results.family_rows(results.VARIANTS)
    assert [(row.key, row.description, row.flags, row.seeds, row.last) for row in rows] == [
        ("maxbow", "A BiLSTM with max pooling.",
         ("--flagfile=dsan_tf/models/maxbow/configs/maxbow_snli25k_glove50.cfg",), 1, True)]
