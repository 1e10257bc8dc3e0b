"""A sweep over configuration fields on Ray Tune (`dsan-tune`): each trial is an ordinary
run directory (config.json, history.csv, TensorBoard, best.keras: every program reads it),
trained one epoch at a time by `driver.train_run` so that ASHA can stop it between epochs
on its dev accuracy; a sweep killed and started again goes on where it stopped (Tune's
experiment state, and each trial's run directory resumed from its record).

    dsan-tune --config=demo --workdir=/tmp/sweep \
        --search=learning_rate:loguniform:1e-4:3e-3 \
        --search=distance_alpha:choice:0,1,1.5,2 --num_samples=8
"""

import dataclasses
import os
import re

from dsan_tf.common.errors import UsageError
from dsan_tf.core import rundir as run_files
from dsan_tf.training import cluster

# The kinds of --search and how many values each takes after the field's name.
KINDS = {"loguniform": 2, "uniform": 2, "choice": 1, "grid": 1}
METRIC = "dev_accuracy"
TRIALS, TUNE = "trials", "tune"  # under the sweep's folder: run directories, Tune's state


@dataclasses.dataclass(frozen=True)
class Search:
    """One field searched: its name, the kind of space and its values (typed as the
    field: bounds for loguniform and uniform, candidates for choice and grid)."""

    field: str
    kind: str
    values: tuple

    def space(self):
        from ray import tune

        if self.kind == "loguniform":
            return tune.loguniform(*self.values)
        if self.kind == "uniform":
            return tune.uniform(*self.values)
        if self.kind == "grid":
            return tune.grid_search(list(self.values))
        return tune.choice(list(self.values))


def parse_search(spec, config):
    """The `Search` of a --search value "FIELD:KIND:ARGS" (loguniform:LOW:HIGH,
    uniform:LOW:HIGH, choice:V1,V2,... or grid:V1,V2,...) for a field of `config`
    (`ExperimentConfig`: its family's, data's or training's); `UsageError` naming the
    spec where it is not one."""
    parts = spec.split(":")
    if len(parts) < 3 or parts[1] not in KINDS or len(parts) - 2 != KINDS[parts[1]]:
        raise UsageError(f"search={spec}: give FIELD:loguniform:LOW:HIGH, "
                         "FIELD:uniform:LOW:HIGH, FIELD:choice:V1,V2,... or "
                         "FIELD:grid:V1,V2,...", fields=("search",))
    field, kind, *arguments = parts
    values = config.flat()
    if field not in values or field == "model":
        raise UsageError(f"search={spec}: {field} is not a field of --model={config.model}'s "
                         "configuration (its model, data and training flags).",
                         fields=("search",))
    raw = arguments if kind in ("loguniform", "uniform") else arguments[0].split(",")
    typed = tuple(_typed(value, values[field], spec) for value in raw)
    if kind in ("loguniform", "uniform") and not (
            isinstance(typed[0], (int, float)) and typed[0] < typed[1]
            and (kind == "uniform" or typed[0] > 0)):
        raise UsageError(f"search={spec}: the bounds must be numbers, the first below the "
                         "second (and above 0 for loguniform).", fields=("search",))
    return Search(field, kind, typed)


def _typed(text, default, spec):
    """`text` as the type of the field's `default` (a bool, int, float or str)."""
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if isinstance(default, int) and not re.search(r"[.eE]", text):
            return int(text)
        if isinstance(default, (int, float)) or default is None:
            return float(text) if default is not None or re.fullmatch(
                r"[-+0-9.eE]+", text) else text
    except ValueError:
        raise UsageError(f"search={spec}: {text!r} is not a value of the field "
                         f"({type(default).__name__}).", fields=("search",)) from None
    return text


def trial_name(params):
    """A trial's folder name: its searched values, in the fields' order."""
    text = ",".join(f"{name}={_shown(value)}" for name, value in sorted(params.items()))
    return re.sub(r"[^A-Za-z0-9_.,=+-]", "_", text)


def _shown(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def train_trial(params, config, policy, root):
    """A Tune trial (its function): the run of `config` with the searched `params`, in
    ROOT/trials/<trial_name>, trained one epoch at a time (`train_run`'s
    `stop_after_epochs`, each call resuming the run's record) and reported to Tune after
    each epoch (the epochs a run already had, after a restart, first), until the run is
    finished or ASHA stops the trial."""
    from ray import tune

    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver

    workdir = os.path.join(root, TRIALS, trial_name(params))
    trial_config = config.replace(**params)
    reported = 0
    while True:
        rows = run_files.read_history(os.path.join(workdir, run_files.HISTORY))
        for row in rows[reported:]:
            tune.report({METRIC: row.get("val_accuracy", 0.0), "epoch": row["epoch"],
                         "workdir": workdir})
        reported = len(rows)
        if os.path.exists(os.path.join(workdir, run_files.RESULTS)):
            return
        driver.train_run(workdir, NLITask(trial_config, policy), stop_after_epochs=1)


def run_sweep(root, config, policy, searches, num_samples, scheduler, resources,
              address=None):
    """Runs (or, where ROOT/tune holds a sweep's state, resumes) the sweep; returns the
    trials' rows (`table_rows`)."""
    ray = cluster.require_ray()
    ours = not ray.is_initialized()
    cluster.connect(address)
    try:
        _fit(root, config, policy, searches, num_samples, scheduler, resources)
    finally:
        if ours:  # the trials' last lines would otherwise print after the sweep's table;
            ray.shutdown()  # each trial's train.log keeps them all
    return table_rows(root, config.training.epochs)


def _fit(root, config, policy, searches, num_samples, scheduler, resources):
    """Builds (or restores) the Tuner of the sweep and fits it."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    os.makedirs(os.path.join(root, TRIALS), exist_ok=True)
    cluster.check_shared([root])
    trainable = tune.with_resources(
        tune.with_parameters(_trial_function, config=config, policy=policy,
                             root=os.path.abspath(root)),
        {"cpu": resources["cpus"], "gpu": resources["gpus"]})
    path = os.path.join(os.path.abspath(root), TUNE)
    if tune.Tuner.can_restore(path):
        print(f"resuming the sweep in {path}", flush=True)
        tuner = tune.Tuner.restore(path, trainable=trainable, resume_unfinished=True,
                                   restart_errored=True)
    else:
        tuner = tune.Tuner(
            trainable, param_space={s.field: s.space() for s in searches},
            tune_config=tune.TuneConfig(
                num_samples=num_samples,
                scheduler=ASHAScheduler(metric=METRIC, mode="max", time_attr="epoch",
                                        max_t=config.training.epochs, **scheduler)),
            run_config=tune.RunConfig(
                storage_path=os.path.abspath(root), name=TUNE, verbose=0,
                # A trial whose worker or node died starts again: its run directory resumes.
                failure_config=tune.FailureConfig(max_failures=cluster.RETRIES)))
    tuner.fit()


def _trial_function(params, config, policy, root):
    train_trial(params, config, policy, root)


def table_rows(root, epochs):
    """A row per trial folder: its searched values (folder name), epochs trained, best dev
    accuracy and its epoch, whether it finished or was stopped early; best first."""
    rows = []
    folder = os.path.join(root, TRIALS)
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        workdir = os.path.join(folder, name)
        history = run_files.read_history(os.path.join(workdir, run_files.HISTORY))
        if not history:
            continue
        best = max(history, key=lambda row: row.get("val_accuracy", 0.0))
        rows.append({"trial": name, "workdir": workdir, "epochs": len(history),
                     "dev_accuracy": best.get("val_accuracy", 0.0), "best_epoch": best["epoch"],
                     "finished": os.path.exists(os.path.join(workdir, run_files.RESULTS)),
                     "of": epochs})
    return sorted(rows, key=lambda row: -row["dev_accuracy"])


def table(rows):
    """The sweep's table (Markdown), best dev accuracy first."""
    lines = ["| trial | dev accuracy | best epoch | epochs | |", "|---|---|---|---|---|"]
    for row in rows:
        state = "finished" if row["finished"] else "stopped early (ASHA)"
        lines.append(f"| {row['trial']} | {row['dev_accuracy']:.4f} | {row['best_epoch']} | "
                     f"{row['epochs']} of {row['of']} | {state} |")
    return "\n".join(lines)


def best_command(row):
    """The `dsan-train` command that trains the best trial again (its flags.txt)."""
    with open(os.path.join(row["workdir"], run_files.FLAGFILE), encoding="utf-8") as stream:
        flags = [line.strip() for line in stream if line.strip()]
    import shlex

    return shlex.join(["dsan-train", *flags, f"--workdir={row['workdir']}"])
