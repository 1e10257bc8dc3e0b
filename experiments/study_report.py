"""The study's outputs from its run records (`experiments.results`): the Markdown table,
the machine-readable rows, and the learning curve."""

import functools
import json
import os
import re
import statistics
from importlib import metadata

import numpy as np

from dsan_tf.evaluation import metrics, plots
from dsan_tf.core.config import TrainingConfig
from dsan_tf.programs import flags as project_flags

FULL_TRAIN_PAIRS = 25_299
# `python -m dsan_tf.programs.NAME` (or `experiments.NAME`, the module older records name)
PROGRAM_RUN = re.compile(r"^python -m (?:dsan_tf\.programs|experiments)\.(\w+)(?= |$)")
# A flagfile a command names: a named configuration's (`--config=NAME`) where it is one.
FLAGFILE = re.compile(r"--flagfile=(\S*/)?(\w+)\.cfg(?= |$)")
DIFFERENCES = [
    "d_e 50 (GloVe 6B 50d, lower-cased, 100k words), not 300 (GloVe 840B, cased): every "
    "width scales with it (5 heads of d_k 10, d_ff 200), so DSAN has 0.33M parameters, "
    "not 4.7M;",
    "25,299 SNLI training pairs (4.6% of the 549,367), so absolute accuracies are far below "
    "the paper's 86.3% test;",
    "SNLI dev, not test: the best epoch is chosen on dev and reported on it (optimistic by "
    "the selection, the same for every row);",
]


def schedule(config):
    """(patience, epochs) of the study's flagfile `config`: how its early stopping ends a run
    (the training configuration's defaults where the file leaves them out)."""
    values = {"patience": TrainingConfig.patience, "epochs": TrainingConfig.epochs}
    for line in project_flags.flagfile_flags(config):
        name, _, value = line.lstrip("-").partition("=")
        if name in values:
            values[name] = int(value)
    return values["patience"], values["epochs"]


def _correct(record):
    predictions = np.frombuffer(record["snli_dev_predictions"].encode(), np.uint8)
    labels = np.frombuffer(record["snli_dev_labels"].encode(), np.uint8)
    return predictions == labels


def _runs(records, task, key):
    return [r for r in records.values()
            if "error" not in r and r["task"] == task and r["variant"] == key]


def _mean(values):
    return statistics.fmean(values) if values else None


def _timed(runs):
    """The runs whose seconds per epoch are comparable: those that had every core of their
    machine (records older than the `cores` field had them), else all, marked as such."""
    runs = [r for r in runs if r["seconds_per_epoch"] is not None]
    whole = [r for r in runs if r.get("cores", 0) >= r.get("machine_cores", 0)]
    return (whole, False) if whole or not runs else (runs, True)


def compare(snli, reference):
    """Tests of a row's SNLI runs against a reference row's: (difference of mean accuracy,
    its paired-bootstrap p-value, its 95% interval, McNemar's p of seed 0 against seed 0 or
    None, Welch's p over the seeds' accuracies or None when either row has one seed)."""
    ours, theirs = [_correct(r) for r in snli], [_correct(r) for r in reference]
    difference, p_value, interval = metrics.paired_bootstrap(np.stack(ours), np.stack(theirs))
    mcnemar = (metrics.mcnemar_p(ours[0], theirs[0])
               if snli[0]["seed"] == reference[0]["seed"] else None)
    welch = (metrics.welch_p([r["snli_dev_accuracy"] for r in snli],
                             [r["snli_dev_accuracy"] for r in reference])
             if len(snli) > 1 and len(reference) > 1 else None)
    return difference, p_value, interval, mcnemar, welch


def row(variant, records):
    """One row's figures from its runs (and DSAN's, and its `against` row's, for the paired
    tests)."""
    snli = sorted(_runs(records, "snli", variant.key), key=lambda r: r["seed"])
    timed, fewer_cores = _timed(snli)
    dsan = sorted(_runs(records, "snli", "dsan"), key=lambda r: r["seed"])
    sick = _runs(records, "sick", variant.key)
    accuracies = [r["snli_dev_accuracy"] for r in snli]
    result = {
        "variant": variant.key, "description": variant.description,
        "seeds": [r["seed"] for r in snli], "snli_dev": accuracies,
        "snli_dev_mean": _mean(accuracies),
        "snli_dev_sd": statistics.stdev(accuracies) if len(accuracies) > 1 else None,
        "multinli_m_mean": _mean([r["multinli_accuracy"] for r in snli]),
        "sick_test_mean": _mean([r["test_accuracy"] for r in sick]),
        "params": snli[0]["params"] if snli else (sick[0]["params"] if sick else None),
        "seconds_per_epoch": _mean([r["seconds_per_epoch"] for r in timed]),
        "seconds_on_fewer_cores": fewer_cores,
        "best_epochs": [r["best_epoch"] for r in snli],
        "difference_vs_dsan": None, "difference_ci_vs_dsan": None, "p_value_vs_dsan": None,
        "p_value_mcnemar_seed0": None, "p_value_seeds_vs_dsan": None,
        "kept": variant.kept or None,
        "against": [],
    }
    if snli and dsan and variant.key != "dsan":
        (result["difference_vs_dsan"], result["p_value_vs_dsan"],
         result["difference_ci_vs_dsan"], result["p_value_mcnemar_seed0"],
         result["p_value_seeds_vs_dsan"]) = compare(snli, dsan)
    for key in variant.against:
        reference = sorted(_runs(records, "snli", key), key=lambda r: r["seed"])
        tests = compare(snli, reference) if snli and reference else (None,) * 5
        result["against"].append(dict(zip(
            ("variant", "seeds", "difference", "p_value", "difference_ci", "p_value_mcnemar_seed0",
             "p_value_seeds"), (key, [r["seed"] for r in reference], *tests))))
    return result


def early_stopped(history, patience):
    """(best epoch, its dev accuracy, last epoch) of a run's per-epoch `history` as the
    study's early stopping would have ended it: the best so far kept on a strict rise, and
    training stopped once `patience` epochs have passed without one (training.callbacks)."""
    best_epoch, best = 0, float("-inf")
    for epoch, entry in enumerate(history, 1):
        if entry["val_accuracy"] > best:
            best_epoch, best = epoch, entry["val_accuracy"]
        if epoch - best_epoch >= patience:
            return best_epoch, best, epoch
    return best_epoch, best, len(history)


def selection_lines(variants, records, patience):
    """For the rows trained without early stopping (`--patience=0`): each seed's best dev epoch
    of all against the one the study's early stopping (`patience`) would have kept, read from
    the same run's history (the same weights: the difference is the selection alone)."""
    lines = []
    for variant in [v for v in variants if "--patience=0" in v.flags]:
        for run in sorted(_runs(records, "snli", variant.key), key=lambda r: r["seed"]):
            history = run.get("history") or []
            if not history:
                continue
            every = max(range(len(history)), key=lambda i: history[i]["val_accuracy"])
            epoch, accuracy, stopped = early_stopped(history, patience)
            gain = history[every]["val_accuracy"] - accuracy
            lines.append(f"| `{variant.key}` | {run['seed']} | "
                         f"{100 * history[every]['val_accuracy']:.2f} ({every + 1} of "
                         f"{len(history)}) | {100 * accuracy:.2f} ({epoch}, stopped at "
                         f"{stopped}) | {100 * gain:+.2f} |")
    if not lines:
        return []
    return [f"Best dev epoch of all against the study's early stopping (patience "
            f"{patience}), read from each run's own history (dev accuracy of the "
            "training pass):", "",
            "| variant | seed | best of all (epoch) | early-stopped (epoch) | difference |",
            "|---|---:|---:|---:|---:|", *lines, ""]


def curve(records, sizes):
    """{row: [(training pairs, SNLI dev accuracy)]}, seed 0, of the rows trained on part of
    the pairs (`experiments.results.CURVE_MODELS`)."""
    on_curve = {record["variant"] for record in records.values()
                if "error" not in record and record["task"].startswith("curve")}
    points = {}
    for task, pairs in [(f"curve{s}", s) for s in sizes] + [("snli", FULL_TRAIN_PAIRS)]:
        for record in records.values():
            if ("error" not in record and record["task"] == task and record["seed"] == 0
                    and record["variant"] in on_curve):
                points.setdefault(record["variant"], []).append(
                    (pairs, record["snli_dev_accuracy"]))
    return points


def _percent(value, sd=None):
    if value is None:
        return "–"
    return f"{100 * value:.1f}" + (f" ± {100 * sd:.1f}" if sd is not None else "")


def _p(value):
    return "–" if value is None else ("< 0.001" if value < 0.001 else f"{value:.3f}")


def _delta(difference, interval):
    return ("–" if difference is None else f"{100 * difference:+.1f} "
            "[{:+.1f}, {:+.1f}]".format(*[100 * x for x in interval]))


def _name(r):
    return f"{r['description'].replace('|', chr(92) + '|')} (`{r['variant']}`)"


def table_lines(rows):
    lines = ["| variant | seeds | params | SNLI dev | MultiNLI m. | SICK test | s/epoch | "
             "Δ vs DSAN [95%] | p (bootstrap) | p (McNemar, seed 0) | p (seeds, Welch) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        params = "–" if r["params"] is None else f"{r['params']:,}"
        seconds = ("–" if r["seconds_per_epoch"] is None else f"{r['seconds_per_epoch']:.0f}"
                   + ("†" if r["seconds_on_fewer_cores"] else ""))
        lines.append(
            f"| {_name(r)} | {len(r['seeds'])} | {params} | "
            f"{_percent(r['snli_dev_mean'], r['snli_dev_sd'])} | "
            f"{_percent(r['multinli_m_mean'])} | {_percent(r['sick_test_mean'])} | {seconds} | "
            f"{_delta(r['difference_vs_dsan'], r['difference_ci_vs_dsan'])} | "
            f"{_p(r['p_value_vs_dsan'])} | {_p(r['p_value_mcnemar_seed0'])} | "
            f"{_p(r['p_value_seeds_vs_dsan'])} |")
    return lines


def against_lines(rows):
    """The rows that change another row, compared with it (`Variant.against`); rows not yet
    trained are in the main table only."""
    pairs = [(r, other) for r in rows if r["seeds"] for other in r["against"]]
    if not pairs:
        return []
    lines = ["The rows that change another row, against that row (the same tests; a row's "
             "seeds against the other's):", "",
             "| variant | SNLI dev | against | its SNLI dev | Δ [95%] | p (bootstrap) | "
             "p (McNemar, seed 0) | p (seeds, Welch) |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r, other in pairs:
        theirs = next((o for o in rows if o["variant"] == other["variant"]), None)
        lines.append(
            f"| {_name(r)} | {_percent(r['snli_dev_mean'], r['snli_dev_sd'])} | "
            f"`{other['variant']}` | "
            f"{_percent(theirs['snli_dev_mean'], theirs['snli_dev_sd']) if theirs else '–'} | "
            f"{_delta(other['difference'], other['difference_ci'])} | "
            f"{_p(other['p_value'])} | {_p(other['p_value_mcnemar_seed0'])} | "
            f"{_p(other['p_value_seeds'])} |")
    return lines + [""]


def kept_lines(rows):
    """What differs today for the rows kept as measured (`Variant.kept`)."""
    kept = [r for r in rows if r["kept"]]
    if not kept:
        return []
    return (["Rows kept as measured (never trained again by this command):", ""]
            + [f"- `{r['variant']}`: {r['kept']}" for r in kept] + [""])


def curve_lines(points, sizes):
    columns = sorted(set(sizes) | {FULL_TRAIN_PAIRS})
    lines = ["| model | " + " | ".join(f"{c:,} pairs" for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for model, model_points in points.items():
        found = dict(model_points)
        lines.append(f"| {model} | " + " | ".join(_percent(found.get(c)) for c in columns)
                     + " |")
    return lines


@functools.lru_cache(maxsize=None)
def _console_scripts():
    """{module: console script} of the installed `dsan-*` programs (pyproject.toml's)."""
    return {entry.value.split(":")[0]: entry.name
            for entry in metadata.entry_points(group="console_scripts")
            if entry.value.startswith("dsan_tf.programs.")}


@functools.lru_cache(maxsize=None)
def _named_configs():
    """The named configurations (`registry.named_configs`), read once for the report's
    commands, not once per command."""
    from dsan_tf.models import registry

    return registry.named_configs()


def typed(command):
    """A recorded command as a reader types it now: a program run as a module (as the
    study runs it, or through a shim older records name, since removed) is its `dsan-*`
    console script, and the flagfiles of named configurations, each on top of the one
    before (the study's configuration, then a rival's), are `--config=` the last (wherever the
    files were when it ran); other commands are left as recorded."""
    scripts = _console_scripts()
    command = PROGRAM_RUN.sub(
        lambda match: scripts.get(f"dsan_tf.programs.{match.group(1)}", match.group(0)), command)
    named = _named_configs()
    files = [match for match in FLAGFILE.finditer(command) if match.group(2) in named]
    names = [match.group(2) for match in files]
    if not files or named[names[0]].base or any(
            named[after].base != before for before, after in zip(names, names[1:])):
        return command
    for match in reversed(files[1:]):
        command = command[:match.start() - 1] + command[match.end():]
    return command[:files[0].start()] + f"--config={names[-1]}" + command[files[0].end():]


def markdown(rows, points, records, settings, sizes, elapsed, variants):
    command = settings.command or (f"python -m experiments.results --workdir="
                                   f"{settings.workdir} --shared_data={settings.shared_data}")
    finished = [r for r in records.values() if "error" not in r]
    patience, epochs = schedule(settings.config)
    stopping = (f"early stopping (patience {patience}, at most {epochs} epochs)" if patience
                else f"{epochs} epochs, the best dev epoch kept")
    wall = sum(r.get("wall_seconds", 0.0) for r in finished)
    lines = [
        "# The reproduction study: SNLI 25k + GloVe 6B 50d (regenerated by "
        "`experiments.results`)", "", "```", command, "```", "",
        f"Every run starts from `{settings.config}` and adds its row's flags: the paper's "
        "optimiser (Adam 1e-3), batch 64, dropout 0.1 and classifier, frozen vectors, "
        "selected on SNLI dev. The joint models' rows add their own paper's flagfile "
        "(blocks, optimiser, dropout; see the commands below). An ensemble row trains "
        "nothing: it averages the probabilities of its members' seeds. What differs from "
        "the paper:", "",
        *[f"- {d}" for d in DIFFERENCES],
        f"- {stopping} instead of the paper's unstated schedule.", "",
        "- **SNLI dev**: mean ± sd over the seeds (0, 1, 2 where 3; else seed 0).",
        "- **MultiNLI m.**: the SNLI models on MultiNLI dev-matched (cross-domain).",
        "- **SICK test**: the row trained on SICK train (4,500), selected on SICK trial, seed 0.",
        "- **Δ vs DSAN** [95% interval] and **p (bootstrap)**: the difference of mean SNLI dev "
        "accuracy to the DSAN row, its percentile interval and a two-sided p-value from a "
        "paired bootstrap over the 9,842 dev pairs (10,000 resamples, each row's seeds "
        "averaged per pair: the interval covers the choice of dev pairs, not of seeds); "
        "**McNemar**: exact test, seed 0 against DSAN's seed 0; **p (seeds, Welch)**: "
        "Welch's t-test of the two rows' per-seed accuracies (both with 2 seeds or more), "
        "the one test here that counts training's randomness.",
        "- **s/epoch**: wall-clock seconds of a training epoch with its dev pass, 2-core CPU, "
        "over the row's runs that had every core; † where none had (runs trained two at a "
        "time, `--cpus_per_run=1`, one core each): slower, not comparable with the others.",
        "", *table_lines(rows), "", *against_lines(rows),
        *selection_lines(variants, records, patience), *kept_lines(rows),
        "## Learning curve (seed 0, SNLI dev; `learning_curve.png`)", "",
        *curve_lines(points, sizes), "",
        f"Runs finished: {len(finished)}; their wall clock summed: {wall / 3600:.2f} h "
        f"(this invocation: {elapsed / 3600:.2f} h).", "", "## Commands", ""]
    for name, record in records.items():
        lines.append(f"- `{name}`: `{typed(record.get('command', ''))}`")
        if "evaluate_command" in record:
            lines.append(f"  then `{typed(record['evaluate_command'])}`")
        if "error" in record:
            lines.append(f"  - **{record['error']}**")
    return "\n".join(lines) + "\n"


def write(records, variants, sizes, settings, elapsed):
    """Writes the Markdown table, the JSON rows and the learning-curve PNG.

    Args:
        records: {run name: record} (`experiments.results.perform`).
        variants: the rows, `experiments.results.Variant`s.
        sizes: training-set sizes of the learning curve besides the whole file.
        settings: `experiments.results.Settings` (commands and output paths).
        elapsed: seconds this invocation has run.
    """
    rows = [row(v, records) for v in variants]
    points = curve(records, sizes)
    for path in (settings.output, settings.json_output, settings.curve_output,
                 settings.history_output):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(settings.output, "w", encoding="utf-8") as stream:
        stream.write(markdown(rows, points, records, settings, sizes, elapsed, variants))
    with open(settings.json_output, "w", encoding="utf-8") as stream:
        json.dump({"setting": settings.config, "rows": rows,
                   "learning_curve": {m: [list(p) for p in sorted(ps)]
                                      for m, ps in points.items()}}, stream, indent=1)
    if points:
        with open(settings.curve_output, "wb") as stream:
            stream.write(plots.png_bytes(plots.learning_curve(
                points, "SNLI dev accuracy, GloVe 6B 50d, seed 0")))
    histories = {v.key: records[f"snli/{v.key}/seed0"]["history"] for v in variants
                 if (records.get(f"snli/{v.key}/seed0") or {}).get("history")}
    if histories and settings.history_output:
        with open(settings.history_output, "wb") as stream:
            stream.write(plots.png_bytes(plots.training_curves(
                histories, "SNLI 25k, GloVe 6B 50d, seed 0: train (solid) and dev (dashed)")))
