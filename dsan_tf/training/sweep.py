"""A sweep over configuration fields on Ray Tune (`dsan-tune`): each trial is an ordinary
run directory (config.json, history.csv, TensorBoard, best.keras: every program reads it)
named by its Tune trial id and values, trained by one `driver.train_run` whose Keras
callback reports each committed epoch's dev accuracy to Tune, so that ASHA can stop it
between epochs; a sweep killed and started again goes on where it stopped (Tune's
experiment state, and each trial's run directory resumed from its record).

    dsan-tune --config=demo --workdir=/tmp/sweep \
        --search=learning_rate:loguniform:1e-4:3e-3 \
        --search=distance_alpha:choice:0,1,1.5,2 --num_samples=8

A cluster is not this machine: the configuration's paths are made absolute here, every
node is checked to read its files and write the sweep's folder, and the code reaches the
nodes in Ray's `runtime_env` (`cluster.connect`). A trial's own mistake (a `UsageError`,
a `DataError`) is not retried: its sentence is kept beside its run directory and shown in
the table; a trial whose worker or node died is retried by Tune.
"""

import dataclasses
import hashlib
import os
import re
import signal

from dsan_tf.common import atomic
from dsan_tf.common.errors import UsageError
from dsan_tf.core import rundir as run_files
from dsan_tf.models.config import absolute_paths, local_files
from dsan_tf.training import cluster

# The kinds of --search and how many values each takes after the field's name.
KINDS = {"loguniform": 2, "uniform": 2, "choice": 1, "grid": 1}
# How trials are drawn: Tune's random and grid variants, or Optuna's TPE (`OptunaSearch`).
SEARCH_ALGS = ("random", "optuna")
METRIC = "dev_accuracy"
TRIALS, TUNE = "trials", "tune"  # under the sweep's folder: run directories, Tune's state
ERROR = ".error"  # beside a trial's run directory: the sentence of its own mistake


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


def trial_name(trial_id, params):
    """A trial's folder name: Tune's trial id, then its searched values in the fields'
    order (two trials of the same values are two folders)."""
    text = ",".join(f"{name}={_shown(value)}" for name, value in sorted(params.items()))
    return re.sub(r"[^A-Za-z0-9_.,=+-]", "_", f"{trial_id}-{text}")


def _shown(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def trial_values(trial_id, params, config, replicates):
    """The fields a trial sets: its searched `params`, and where the sweep draws
    `replicates` (--num_samples above 1) and no seed is searched, its own seed, so that
    repeats are replicates: the configuration's plus the trial's number (Tune's random
    and grid draws number their trials, "5ca93_00003"), or plus a number drawn from its id
    (a search algorithm's trials are not numbered)."""
    values = dict(params)
    if replicates and "seed" not in values:
        number = trial_id.rsplit("_", 1)[-1]
        values["seed"] = config.data.seed + (
            int(number) if number.isdigit() and "_" in trial_id
            else int(hashlib.sha256(trial_id.encode()).hexdigest()[:6], 16))
    return values


def train_trial(params, config, policy, root, replicates):
    """A Tune trial (its function): the run of `config` with the searched `params` in
    ROOT/trials/<trial_name>, trained by one `train_run` whose `ReportEpochs` callback
    reports each committed epoch to Tune (the epochs a run already has, after a restart,
    first), until the run is finished or ASHA stops the trial. A `UsageError` or
    `DataError` is the trial's own mistake: its sentence is written beside the run
    directory (ERROR) and the trial ends, not retried."""
    from ray import tune

    from dsan_tf.core.task import NLITask
    from dsan_tf.data.examples import DataError
    from dsan_tf.training import callbacks, driver

    trial_id = tune.get_context().get_trial_id()
    workdir = os.path.join(root, TRIALS, trial_name(trial_id, params))
    values = trial_values(trial_id, params, config, replicates)
    reported = []

    def report(epoch, logs, last=False):
        # The last epoch is reported once the run is finished: ASHA ends a trial that
        # reaches its max_t at once, before the run would write its results.
        if epoch in reported or (epoch >= config.training.epochs and not last):
            return
        reported.append(epoch)
        tune.report({METRIC: float(logs.get("val_accuracy", 0.0)), "epoch": epoch,
                     "seed": values.get("seed", config.data.seed), "workdir": workdir})

    history = os.path.join(workdir, run_files.HISTORY)
    for row in run_files.read_history(history):  # a restarted trial's epochs
        report(row["epoch"], row)
    try:
        try:
            trial_config = config.replace(**values)
        except ValueError as error:  # values that do not go together (num_heads, embedding_dim)
            raise UsageError(str(error)) from None
        driver.train_run(workdir, NLITask(trial_config, policy),
                         callbacks=[callbacks.ReportEpochs(report)])
    except (UsageError, DataError) as error:
        atomic.write_text(workdir + ERROR, " ".join(str(error).split()))
        return
    for row in run_files.read_history(history):
        report(row["epoch"], row, last=True)


def check_search_alg(search_alg, searches):
    """`UsageError` where `search_alg` cannot draw `searches` (Optuna draws no grid)."""
    if search_alg not in SEARCH_ALGS:
        raise UsageError(f"search_alg={search_alg}: choose one of {', '.join(SEARCH_ALGS)}.",
                         fields=("search_alg",))
    grids = [s.field for s in searches if s.kind == "grid"]
    if search_alg == "optuna" and grids:
        raise UsageError(f"search_alg=optuna draws no grid ({', '.join(grids)}): give those "
                         "fields as FIELD:choice:V1,V2,... or use --search_alg=random.",
                         fields=("search_alg", "search"))


@dataclasses.dataclass(frozen=True)
class Sweep:
    """What a sweep is: the configuration and policy its trials share, the `Search`es,
    how many trials are drawn and how, ASHA's settings and each trial's resources."""

    config: object  # ExperimentConfig
    policy: object  # RunPolicy
    searches: tuple
    num_samples: int
    search_alg: str
    scheduler: dict  # ASHA's grace_period and reduction_factor
    resources: dict  # {"cpus", "gpus"} per trial


def run_sweep(root, sweep, address=None):
    """Runs (or, where ROOT/tune holds a sweep's state, resumes) the `Sweep` on Ray
    (this machine's, or the cluster at `address`); returns (its rows, `table_rows`;
    whether a Ctrl-C interrupted it)."""
    ray = cluster.require_ray()
    root = os.path.abspath(root)
    # Read on the nodes, whose folders are not this process's.
    config, policy = sweep.config.absolute(), absolute_paths(sweep.policy)
    ours = not ray.is_initialized()
    cluster.connect(address, sweep.resources["gpus"])
    try:
        cluster.check_resources(sweep.resources["cpus"], sweep.resources["gpus"],
                                ("cpus_per_trial", "gpus_per_trial"))
        os.makedirs(os.path.join(root, TRIALS), exist_ok=True)
        cluster.check_nodes([root], reads=[*config.local_files(), *local_files(policy)])
        grid, interrupted = _fit(root, dataclasses.replace(sweep, config=config,
                                                           policy=policy))
    finally:
        if ours:  # the trials' last lines would otherwise print after the sweep's table;
            ray.shutdown()  # each trial's train.log keeps them all
    return table_rows(root, grid, config.training.epochs, interrupted), interrupted


def _fit(root, sweep):
    """Builds (or restores) the Tuner of the sweep, fits it and returns (its `ResultGrid`,
    whether a Ctrl-C interrupted it)."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    trainable = tune.with_resources(
        tune.with_parameters(_trial_function, config=sweep.config, policy=sweep.policy,
                             root=root, replicates=sweep.num_samples > 1),
        {"cpu": sweep.resources["cpus"], "gpu": sweep.resources["gpus"]})
    path = os.path.join(root, TUNE)
    if tune.Tuner.can_restore(path):
        print(f"resuming the sweep in {path}", flush=True)
        tuner = tune.Tuner.restore(path, trainable=trainable, resume_unfinished=True,
                                   restart_errored=True)
    else:
        tuner = tune.Tuner(
            trainable, param_space={s.field: s.space() for s in sweep.searches},
            tune_config=tune.TuneConfig(
                num_samples=sweep.num_samples, search_alg=_search_alg(sweep),
                scheduler=ASHAScheduler(metric=METRIC, mode="max", time_attr="epoch",
                                        max_t=sweep.config.training.epochs,
                                        **sweep.scheduler)),
            run_config=tune.RunConfig(
                storage_path=root, name=TUNE, verbose=0,
                # A trial whose worker or node died starts again: its run directory resumes.
                failure_config=tune.FailureConfig(max_failures=cluster.RETRIES)))
    # Tune saves the sweep's state on a Ctrl-C and returns; its handler puts back the one
    # it found only then (Ray Tune's `_setup_signal_catching`), which tells the two apart.
    before = signal.getsignal(signal.SIGINT)
    grid = tuner.fit()
    interrupted = signal.getsignal(signal.SIGINT) is before and before is not None
    signal.signal(signal.SIGINT, before)
    return grid, interrupted


def _search_alg(sweep):
    """Tune's search algorithm for `sweep.search_alg` (None: its random and grid draws)."""
    if sweep.search_alg != "optuna":
        return None
    from ray.tune.search.optuna import OptunaSearch

    return OptunaSearch(metric=METRIC, mode="max", seed=sweep.config.data.seed)


def _trial_function(params, config, policy, root, replicates):
    train_trial(params, config, policy, root, replicates)


# A trial's state in the table, from Tune's status and its run directory.
FINISHED, STOPPED, INTERRUPTED, ERRORED, PENDING = (
    "finished", "stopped early (ASHA)", "interrupted", "errored", "pending")


def table_rows(root, grid, epochs, interrupted=False):
    """A row per trial of the `ResultGrid` `grid`, best dev accuracy first: the trial's
    folder name and run directory, epochs trained, best dev accuracy and its epoch (the
    grid's DataFrame: each trial's best report), seed, state (`FINISHED`, ...) and, for an
    errored trial, its first error line. After a Ctrl-C (`interrupted`) Tune has ended
    every running trial: their statuses are read from the state it saved."""
    from ray.tune import ExperimentAnalysis

    frame = grid.get_dataframe(filter_metric=METRIC, filter_mode="max") if any(
        result.metrics for result in grid) else None
    best = {} if frame is None else {row["trial_id"]: row
                                      for row in frame.to_dict("records")}
    trials = grid._experiment_analysis.trials  # Tune's statuses (its Results hold none)
    saved = ({t.trial_id: t.status for t in ExperimentAnalysis(
        os.path.join(root, TUNE)).trials} if interrupted else {})
    rows = []
    for trial, result in zip(trials, grid):
        workdir = os.path.join(root, TRIALS, trial_name(trial.trial_id, trial.config))
        history = run_files.read_history(os.path.join(workdir, run_files.HISTORY))
        done = len(history)
        found = best.get(trial.trial_id)
        if found is None and history:  # epochs committed that Tune had not yet received
            row = max(history, key=lambda row: row.get("val_accuracy", 0.0))
            found = {METRIC: row.get("val_accuracy", 0.0), "epoch": row["epoch"]}
        found = found or {}
        state, error = _state(saved.get(trial.trial_id, trial.status), workdir, done, result)
        rows.append({"trial": os.path.basename(workdir), "workdir": workdir, "epochs": done,
                     "of": epochs, "dev_accuracy": found.get(METRIC),
                     "best_epoch": found.get("epoch"), "seed": found.get("seed"),
                     "state": state, "error": error})
    rows.sort(key=lambda row: -(row["dev_accuracy"] if row["dev_accuracy"] is not None
                                else -1.0))
    return rows


def _state(status, workdir, done, result):
    """(the trial's state, its first error line or None) from Tune's `status`, the run
    directory `workdir` with `done` epochs, and Tune's `Result` of the trial."""
    if os.path.exists(workdir + ERROR):
        with open(workdir + ERROR, encoding="utf-8") as stream:
            return ERRORED, stream.read().strip()
    if status == "ERROR" or result.error is not None:
        lines = [line.strip() for line in str(result.error).splitlines() if line.strip()]
        return ERRORED, f"{lines[-1] if lines else 'failed'} (Tune's log: {result.path})"
    if os.path.exists(os.path.join(workdir, run_files.RESULTS)):
        return FINISHED, None
    if status == "TERMINATED":
        return STOPPED, None
    return (INTERRUPTED if done else PENDING), None


def table(rows):
    """The sweep's table (Markdown), best dev accuracy first."""
    lines = ["| trial | dev accuracy | best epoch | epochs | seed | state |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        accuracy = "–" if row["dev_accuracy"] is None else f"{row['dev_accuracy']:.4f}"
        state = f"{row['state']}: {row['error']}" if row["error"] else row["state"]
        lines.append(f"| {row['trial']} | {accuracy} | {row['best_epoch'] or '–'} | "
                     f"{row['epochs']} of {row['of']} | "
                     f"{'–' if row['seed'] is None else row['seed']} | {state} |")
    return "\n".join(lines)


def best_command(row):
    """The `dsan-train` command that trains the best trial again (its flags.txt)."""
    with open(os.path.join(row["workdir"], run_files.FLAGFILE), encoding="utf-8") as stream:
        flags = [line.strip() for line in stream if line.strip()]
    import shlex

    return shlex.join(["dsan-train", *flags, f"--workdir={row['workdir']}"])
