"""The reproduction study at the largest real data we hold: every variant trained on
25,299 SNLI pairs with frozen GloVe 6B 50d (`--config=snli25k_glove50`).

    python -m experiments.results --workdir=/work/study [--shared_data=../shared/data]

Per row: SNLI dev (mean ± sd over seeds), MultiNLI dev-matched (the SNLI model, cross-domain),
SICK test (trained on SICK train, selected on SICK trial, seed 0), parameters, seconds per
epoch, and a paired test against DSAN on SNLI dev. Plus a learning curve (DSAN, DSAN without
distance prior, DiSAN, CBOW at 5.5k, 12.5k and 25k training pairs). Writes --output
(docs/RESULTS.md), --json_output (records/results.json) and --curve_output
(records/learning_curve.png).

Every finished run leaves a record (--record_dir, committed with the table: metrics, the
commands, SNLI dev predictions); a record is reused instead of training again, so the study
resumes where it stopped, on this machine or another. The table is rewritten after each run.

Ray runs them (`dsan_tf.training.cluster`): on this machine by default, on a cluster with
--ray_address; each run is one task of --cpus_per_run CPUs and --gpus_per_run GPUs, an
ensemble waits on its members' tasks, and a run whose node dies is retried by Ray and
resumes its run directory.
"""

import dataclasses
import hashlib
import os
import sys
import time

from absl import flags

from dsan_tf.core import rundir
from dsan_tf.core.rundir import read_history, read_json, write_json
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program
from dsan_tf.training import cluster
from benchmarks import machine

FLAGS = project_flags.FLAGS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _flagfiles(*names):
    """The flagfiles of the named configurations `names`, as the study's commands give
    them: each file's path from the clone's root (the registry knows where each lives)."""
    from dsan_tf.models import registry

    named = registry.named_configs()
    return [os.path.relpath(named[name].path, ROOT) for name in names]


CONFIG_FILE, _GT_FILE, _AFDMN_FILE = _flagfiles(
    "snli25k_glove50", "gaussian_transformer_snli25k_glove50", "afdmn_snli25k_glove50")
GLOVE = "glove/glove.6B.50d.top100k.txt.gz"
SNLI = {"train_data": "snli/snli_1.0_train_25k.jsonl.gz",
        "dev_data": "snli/snli_1.0_dev.jsonl.gz"}
SICK = {"train_data": "sick/SICK_train.txt", "dev_data": "sick/SICK_trial.txt",
        "test_data": "sick/SICK_test_annotated.txt"}
MULTINLI = "multinli/multinli_1.0_dev_matched.jsonl.gz"
SEEDS = (0, 1, 2)
GT_FLAGFILE, AFDMN_FLAGFILE = f"--flagfile={_GT_FILE}", f"--flagfile={_AFDMN_FILE}"
DSAN_OPTIMIZER = ("--optimizer=adam", "--learning_rate=1e-3", "--patience=3")
# The three, and the paper's ablation: is the distance prior's effect a matter of
# data size? And SAN4NLI's model: does its lead over DSAN shrink as the data grows?
CURVE_MODELS = ("dsan", "prior_none", "disan", "cbow", "san4nli")


def config_flags(preset, base="snli25k_glove50"):
    """The flags that turn the study's configuration (`base`) into `preset`: its fields that
    differ, as a command line writes them (`--name=value`, `--name`/`--noname`)."""
    from dsan_tf.core.config import named_values

    values, start = named_values(preset), named_values(base)
    flags_ = []
    for name, value in values.items():
        if start.get(name) != value:
            flags_.append(f"--{name}" if value is True else f"--no{name}" if value is False
                          else f"--{name}={value}")
    return tuple(flags_)


# The departures whose seed 0 differed from DSAN by 0.5 points or more (docs/STUDY.md,
# "SAN4NLI's departures"), against DSAN's 3-seed mean (the table's paired bootstrap: the four
# LayerNorm and pooling rows) or against DSAN's seed 0 (McNemar's pairing: the initialisers,
# +0.59): 3 seeds each.
SAN4NLI_THREE_SEEDS = ("fusion_norm", "fusion_output_norm", "s2t_norm", "max_pool_padding",
                       "initialization")
# SAN4NLI's model less one departure: the one whose seed 0 rose 1.1 above the preset's 3-seed
# mean (+1.4 against DSAN's; docs/STUDY.md), the paper's classifier width back.
SAN4NLI_WITHOUT_THREE_SEEDS = ("classifier_units",)
# SAN4NLI-pytorch's departures from the paper (docs/FIDELITY.md#san4nli), one at a time.
SAN4NLI_DEPARTURES = (
    ("classifier_units", "classifier width d_e (50), not 300", "--classifier_units=50"),
    ("classifier_input_dropout", "dropout on the classifier's input features",
     "--classifier_input_dropout"),
    ("attention_scale", "attention logits / √d_e, not √d_k", "--attention_scale=d_e"),
    ("qkv_norm", "one LayerNorm shared by Q, K, V", "--qkv_norm=shared"),
    ("fusion_norm", "one LayerNorm shared by S^F and H^F", "--fusion_norm=shared"),
    ("fusion_output_norm", "LayerNorm on the fusion gate's output", "--fusion_output_norm"),
    ("ffn_dropout", "dropout on the FFN's output", "--ffn_dropout"),
    ("s2t_norm", "one LayerNorm shared by source2token's projections", "--s2t_norm=shared"),
    ("max_pool_padding", "max pooling over zero-filled padding", "--max_pool_padding=zeros"),
    ("initialization", "initialisers (Xavier-normal, PyTorch's Linear default)",
     "--initialization=san4nli"),
    ("batching", "plain shuffled batches", "--batching=plain"),
)


def without(flags_, flag):
    """`flags_` less the flag that sets `flag`'s field (the study's configuration's value
    back)."""
    name = flag.split("=")[0]
    kept = tuple(f for f in flags_ if f.split("=")[0] != name)
    if len(kept) != len(flags_) - 1:
        raise ValueError(f"{flag} is not one of {flags_}")
    return kept


@dataclasses.dataclass(frozen=True)
class Variant:
    key: str
    description: str
    flags: tuple = ()
    seeds: int = 1  # how many of SEEDS
    last: bool = False  # trained after everything else (a row that costs most of an hour)
    ensemble_of: str = ""  # not trained: the mean probabilities of this row's seeds
    # Not trained again: the row's records were made by older code or flags, and say what
    # they measured; this sentence says what differs today (shown under the table).
    kept: str = ""
    # Also compared with these rows (a table of their own under the main one): the row it
    # changes, and the row that makes the same change to another model.
    against: tuple = ()


VARIANTS = (
    Variant("dsan", "DSAN (paper: linear distance prior α = 1.5, Q/K/V LayerNorm per head)",
            seeds=3),
    Variant("prior_none", "DSAN, no distance prior (paper's ablation)",
            ("--distance_prior=none",), 3),
    Variant("disan", "DiSAN (Shen et al. 2017)", ("--model=disan",), 3),
    Variant("cbow", "CBOW", ("--model=cbow",), 3),
    Variant("dsan_ensemble", "Ensemble of DSAN's 3 seeds (mean probabilities, as AF-DMN's "
            "Section 5.3)", ensemble_of="dsan"),
    Variant("prior_gaussian", "DSAN, Gaussian prior −w·d²", ("--distance_prior=gaussian",)),
    Variant("prior_gaussian_variant", "DSAN, Gaussian variant −|w·d² + b|",
            ("--distance_prior=gaussian_variant",)),
    Variant("prior_zipf", "DSAN, Zipf prior log 1/(d + 1)", ("--distance_prior=zipf",)),
    Variant("prior_learned", "DSAN, learned bias per distance ≤ 10",
            ("--distance_prior=learned",)),
    Variant("no_direction", "DSAN without direction masks", ("--nouse_direction_mask",)),
    Variant("raw_fusion", "DSAN, raw-input fusion gate (DiSAN's)", ("--fusion=raw",)),
    Variant("pool_multi_dim", "DSAN, source2token pooling only", ("--pooling=multi_dim",)),
    Variant("pool_max", "DSAN, max pooling only", ("--pooling=max",)),
    Variant("qkv_norm_full", "DSAN, Q/K/V LayerNorm over all heads' projection",
            ("--qkv_norm=full",)),
    Variant("san4nli", "SAN4NLI-pytorch's model: all its departures from the paper "
            "(`--config=san4nli`)", config_flags("san4nli"), 3),
    # SAN4NLI's train.py keeps the best dev epoch of all its 20, with no early stopping:
    # more epochs to select from on the same dev set.
    Variant("san4nli_all_epochs", "SAN4NLI's model trained as its train.py: 20 epochs, the "
            "best dev epoch of all kept (no early stopping)",
            (*config_flags("san4nli"), "--epochs=20", "--patience=0"), 3,
            against=("san4nli", "dsan_all_epochs")),
    # The same loop for the paper's model: how much of SAN4NLI's lead is its training loop?
    Variant("dsan_all_epochs", "DSAN trained as SAN4NLI's train.py: 20 epochs, the best dev "
            "epoch of all kept (no early stopping)", ("--epochs=20", "--patience=0"), 3,
            against=("dsan",)),
    *(Variant(f"san4nli_{key}", f"DSAN + SAN4NLI's {text}", (flag,),
              3 if key in SAN4NLI_THREE_SEEDS else 1)
      for key, text, flag in SAN4NLI_DEPARTURES),
    # The other way round: SAN4NLI's model with one departure undone (the paper's reading
    # back), for departures that only matter together. Last: after the rows above.
    *(Variant(f"san4nli_without_{key}", f"SAN4NLI's model less one departure: {text}",
              without(config_flags("san4nli"), flag),
              3 if key in SAN4NLI_WITHOUT_THREE_SEEDS else 1, last=True,
              # The small-data preset's row, also against DSAN trained on this machine.
              against=("san4nli", *(("dsan_all_epochs",) if key in SAN4NLI_WITHOUT_THREE_SEEDS
                                    else ())))
      for key, text, flag in SAN4NLI_DEPARTURES),
    # The joint models cost most: the Gaussian Transformer about 107 s an epoch on 2 cores,
    # AF-DMN's BiLSTMs, run step by step, about 4 minutes (h = 100, k = 3). Each gets its
    # paper's optimiser carried to this data size by epochs (docs/TRAINING.md, "Schedules"), and
    # DSAN's (Adam 1e-3, patience 3), the same treatment as every other row.
    Variant("gaussian_transformer", "Gaussian Transformer (Guo et al. 2019: M 3, N 2, H 4, "
            "d_model 120, d_c 30), its AdamWR by epochs: restarts every 10, stops only at a "
            "cycle's end", (GT_FLAGFILE,), last=True),
    Variant("gaussian_transformer_adam", "Gaussian Transformer, DSAN's optimiser (Adam 1e-3, "
            "patience 3)", (GT_FLAGFILE, *DSAN_OPTIMIZER, "--restart_epochs=0",
                           "--min_learning_rate=0", "--normalized_weight_decay=0"),
            last=True),
    Variant("afdmn", "AF-DMN (Duan et al. 2018: k 3, h 100), ESIM's initialisation, Adam 2e-4 "
            "halved when dev accuracy drops (checked each epoch)", (AFDMN_FLAGFILE,),
            last=True),
    Variant("afdmn_adam", "AF-DMN, ESIM's initialisation, DSAN's optimiser (Adam 1e-3, "
            "patience 3)", (AFDMN_FLAGFILE, *DSAN_OPTIMIZER, "--nohalve_on_dev_drop"),
            last=True),
    Variant("gaussian_transformer_cut", "Gaussian Transformer, AdamWR stopped by patience "
            "mid-cycle at epoch 22: under-trained", (GT_FLAGFILE,), last=True,
            kept="measured with Keras' EarlyStopping, which stopped it one epoch after the "
            "restart at epoch 21 (train accuracy 71%); today a run with restarts stops only "
            "at a cycle's end, so no flag reproduces it."),
    Variant("afdmn_literal", "AF-DMN, literal U(±0.01) initialisation: does not learn",
            (AFDMN_FLAGFILE, "--initialization=uniform"), last=True,
            kept="measured when U(±0.01) was the default: its command had no "
            "--initialization; add --initialization=uniform to run it today."),
    Variant("afdmn_glorot", "AF-DMN, Keras' Glorot initialisation, Adam 2e-4 halved when dev "
            "accuracy drops", (AFDMN_FLAGFILE, "--initialization=glorot"), last=True,
            kept="measured as --init_scale=0, the same Glorot-uniform weights as "
            "--initialization=glorot today."),
)


def family_rows(rows, base="snli25k_glove50"):
    """A row for each model family that no row of `rows` trains and whose folder holds a
    named configuration on the study's one (a `configs/NAME.cfg` with `# base: base`):
    a new family joins the study from its folder (docs/FAMILIES.md). The row trains that
    configuration as it stands (its flagfile, one seed, after the rows above), described by
    its leading comment."""
    from dsan_tf.models import registry

    studied = {row.key for row in rows}
    added = []
    for config in registry.named_configs().values():
        if config.base == base and config.family not in studied:
            studied.add(config.family)
            added.append(Variant(config.family, config.description,
                                 (f"--flagfile={os.path.relpath(config.path, ROOT)}",),
                                 last=True))
    return tuple(added)


VARIANTS += family_rows(VARIANTS)

def define_flags():
    project_flags.define_workdir_flag()
    flags.DEFINE_string("shared_data", "../shared/data",
                        "Directory of the shared datasets and vectors (see its README).")
    flags.DEFINE_string("config", CONFIG_FILE, "The flagfile every run starts from.")
    project_flags.require_existing("config")
    flags.DEFINE_string("output", None, "The table (Markdown); default: WORKDIR/RESULTS.md "
                        "(the committed docs/RESULTS.md only when given).")
    flags.DEFINE_string("json_output", None, "The table, machine-readable; default: "
                        "WORKDIR/results.json.")
    flags.DEFINE_string("curve_output", None, "The learning curve; default: "
                        "WORKDIR/learning_curve.png.")
    flags.DEFINE_string("history_output", None, "Train and dev accuracy and the learning rate "
                        "against training steps, seed 0 of each SNLI row whose record keeps "
                        "its history; default: WORKDIR/training_curves.png.")
    flags.DEFINE_string("record_dir", None, "One record per finished run (reused); default: "
                        "WORKDIR/records (give records/study to reuse the committed ones).")
    flags.DEFINE_multi_string("variants", None, "Only these rows (default: all).")
    flags.DEFINE_integer("max_seeds", len(SEEDS), "At most this many seeds per row.")
    flags.DEFINE_list("curve_sizes", ["5500", "12500"], "Training-set sizes of the learning "
                      "curve besides the whole file (empty: no curve).")
    flags.DEFINE_boolean("sick", True, "Train every row on SICK too (seed 0).")
    flags.DEFINE_boolean("report_only", False, "Rewrite the outputs from the records that "
                         "exist, training nothing.")
    flags.DEFINE_string("ray_address", None, "The Ray cluster to run on: auto (the one "
                        "`ray start` made on this machine) or HOST:PORT of its head; default: "
                        "Ray starts on this machine.")
    flags.DEFINE_float("cpus_per_run", 1.0, "CPUs each run's Ray task declares (its "
                       "TensorFlow thread pools are sized to them): --cpus_per_run=1 on 2 "
                       "cores trains two runs at once.")
    flags.DEFINE_float("gpus_per_run", 0.0, "GPUs each run's Ray task declares; a fraction "
                       "(0.25) lets that many runs share one GPU.")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Where the study reads and writes (from the flags, passed explicitly)."""

    workdir: str
    shared_data: str
    config: str
    output: str
    json_output: str
    curve_output: str
    digest: str  # of `config`: run directories go under workdir/digest
    max_seeds: int = len(SEEDS)
    history_output: str = ""  # train and dev accuracy against steps (empty: none)
    command: str = ""  # the command that made the outputs, as typed (their header)


@dataclasses.dataclass(frozen=True)
class Run:
    """One training run of the study: `task` is snli, sick or curveN (N training pairs)."""

    task: str
    variant: Variant
    seed: int

    @property
    def name(self):
        return f"{self.task}/{self.variant.key}/seed{self.seed}"


def plan(variants, max_seeds, curve_sizes, sick):
    """The runs in the order that makes a partial study most useful: every row's first
    seed (the paper's comparison, DSAN, no distance prior, DiSAN, CBOW, first), the
    remaining seeds, the ensembles of those seeds, SICK, the learning curve, then the rows
    marked `last` (SNLI only: their first seeds, then their others)."""
    first = [v for v in variants if not v.last and not v.ensemble_of]
    runs = [Run("snli", v, SEEDS[0]) for v in first]
    runs += [Run("snli", v, seed) for v in first for seed in SEEDS[1:min(v.seeds, max_seeds)]]
    # Ensembles once their members' seeds are trained (two at least).
    runs += [Run("snli", v, SEEDS[0]) for v in variants
             if v.ensemble_of and len(member_seeds(v, max_seeds)) >= 2]
    if sick:
        runs += [Run("sick", v, SEEDS[0]) for v in first]
    runs += [Run(f"curve{size}", v, SEEDS[0]) for size in curve_sizes for v in first
             if v.key in CURVE_MODELS]
    # The costliest rows come last, so that they never hold up the rest of the table: every
    # one's first seed, then the further seeds of those that have them.
    late = [v for v in variants if v.last]
    runs += [Run("snli", v, SEEDS[0]) for v in late]
    runs += [Run("snli", v, seed) for v in late for seed in SEEDS[1:min(v.seeds, max_seeds)]]
    return runs


def member_seeds(variant, max_seeds):
    """The seeds of the row that the ensemble row `variant` averages."""
    member = next(v for v in VARIANTS if v.key == variant.ensemble_of)
    return SEEDS[:min(member.seeds, max_seeds)]


def train_command(run, shared, root, config):
    """The run's `dsan-train` command: the study's flagfile `config` and a row's flagfiles
    written out as their flags (a node reads no file of this clone), every path absolute."""
    data = SICK if run.task == "sick" else SNLI
    extra = ([f"--train_subset={run.task[len('curve'):]}"] if run.task.startswith("curve")
             else [])
    return [sys.executable, "-m", "dsan_tf.programs.train",
            *inline([f"--flagfile={config}"]),
            *[f"--{name}={os.path.join(shared, spec)}" for name, spec in data.items()],
            f"--embeddings={os.path.join(shared, GLOVE)}", *inline(run.variant.flags), *extra,
            f"--seed={run.seed}", f"--workdir={os.path.join(root, run.name)}"]


def inline(flags_):
    """`flags_` with each `--flagfile=FILE` (from the clone's root, as `VARIANTS` name
    them) replaced by its flags, and each flag that names a local path made absolute."""
    written = []
    for flag in flags_:
        if flag.startswith("--flagfile="):
            written += inline(project_flags.flagfile_flags(
                os.path.join(ROOT, flag.split("=", 1)[1])))
        else:
            written.append(_absolute_flag(flag))
    return written


def _absolute_flag(flag):
    """`--name=value` with the value absolute where the field `name` is a local path."""
    from dsan_tf.core import config as config_lib
    from dsan_tf.models import registry
    from dsan_tf.models.config import local_path

    name, _, value = flag[2:].partition("=")
    for part in (config_lib.DataConfig, config_lib.TrainingConfig, config_lib.RunPolicy,
                 *(registry.family(model).config for model in registry.names())):
        field = next((f for f in dataclasses.fields(part) if f.name == name), None)
        if field and value and local_path(field, value) and not value.startswith("~"):
            return f"--{name}={os.path.abspath(value)}"
    return flag


def log_path(root, run):
    """The run's console, beside its run directory (a program's output never lands inside
    a run): every attempt of each of its programs, appended under its own first line."""
    return os.path.join(root, run.name + ".log")


def evaluation_path(root, run):
    """Where a main run's evaluation goes: beside its run directory (a program's output
    never lands inside a run)."""
    return os.path.join(root, run.name + ".evaluation.json")


def evaluate_command(run, shared, root):
    """SNLI dev with predictions (for the paired tests), and MultiNLI for the main rows."""
    workdir = os.path.join(root, run.name)
    sources = [SNLI["dev_data"]] + ([MULTINLI] if run.task == "snli" else [])
    return [sys.executable, "-m", "dsan_tf.programs.evaluate", f"--workdir={workdir}",
            *[f"--data={os.path.join(shared, s)}" for s in sources], "--save_predictions",
            f"--output={evaluation_path(root, run)}"]


def shown(argv):
    """The command as a reader would type it."""
    return " ".join(["python", *argv[1:]])


def dependencies(run, max_seeds):
    """The names of the runs that `run` reads: an ensemble's members."""
    if not run.variant.ensemble_of:
        return ()
    return tuple(f"snli/{run.variant.ensemble_of}/seed{seed}"
                 for seed in member_seeds(run.variant, max_seeds))


def perform_all(todo, records, settings, record_dir, resources, report):
    """Performs the runs `todo` on Ray, each as one task declaring `resources` ({"cpus",
    "gpus"} per run); an ensemble's task takes its members' tasks as arguments, so Ray
    starts it once they are done. Each run says on which node it starts and ends, and in
    how many seconds, and how far the study is (also every `PROGRESS_SECONDS` while runs
    train); `report(records)` is called after every run. Returns the failed runs'
    {name: their first error line and log}."""
    ray = cluster.require_ray()
    task = ray.remote(perform_on_node).options(
        **cluster.task_options(resources["cpus"], resources["gpus"]))
    threads = cluster.threads_for(resources["cpus"])
    made = {}
    for run in todo:  # the plan lists members before their ensemble
        members = [made[name] for name in dependencies(run, settings.max_seeds)
                   if name in made]
        made[run.name] = task.remote(run, settings, record_dir, threads, *members)
    names = {ref: name for name, ref in made.items()}
    pending, failed = list(made.values()), {}
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=PROGRESS_SECONDS)
        if done:
            record, node, seconds = ray.get(done[0])
            name = names[done[0]]
            if "error" in record:
                failed[name] = record["error"]
                print(f"{name} failed on {node} in {seconds:.0f} s: {record['error']}",
                      flush=True)
            else:
                print(f"{name} done on {node} in {seconds:.0f} s", flush=True)
                records[name] = record
                report(records)
        finished = len(made) - len(pending)
        print(f"study: {finished} of {len(made)} runs done ({len(failed)} failed), "
              f"{len(pending)} to go", flush=True)
    return failed


# How often the study says how far it is while no run ends (a run can take an hour).
PROGRESS_SECONDS = 300


def perform_on_node(run, settings, record_dir, threads, *members):
    """A run's Ray task (`members`: its ensemble members' results, which Ray waited for):
    (its record, the node's address, seconds)."""
    node, started = cluster.node_address(), time.perf_counter()
    print(f"{run.name} started on {node}", flush=True)
    record = perform(run, settings, record_dir, threads)
    return record, node, time.perf_counter() - started


def config_digest(path, extra_flags=()):
    """Digest of a flagfile's flags (comments and blank lines aside) and of `extra_flags`
    (a row's flags; the flags of a --flagfile among them count, not its name). Records
    and run directories carry it, so none made under another configuration is reused."""
    lines = project_flags.flagfile_flags(path)
    for flag in extra_flags:
        lines += (project_flags.flagfile_flags(flag.split("=", 1)[1]) if flag.startswith("--flagfile=")
                  else [flag])
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]


def run_digest(run, settings):
    """The configuration digest of one run: the study's flagfile's, extended with the
    row's flags when they read a flagfile of their own (which can change unseen; the
    other rows' flags are written in `VARIANTS` and in each record's command)."""
    if not any(flag.startswith("--flagfile=") for flag in run.variant.flags):
        return settings.digest
    return config_digest(settings.config, run.variant.flags)


def current_record(path, digest, kept=False):
    """The record at `path` if it was made under the configuration `digest` (any, for a
    kept row's), else None."""
    if not os.path.exists(path):
        return None
    record = read_json(path)
    return record if kept or record.get("config_digest") == digest else None


def perform(run, settings, record_dir, threads=None):
    """The run's record: reused when it exists under this configuration; otherwise trained
    (a finished workdir of this configuration is reused, an unfinished one resumed),
    evaluated and written, its frameworks on `threads` threads (None: every core). A
    failure is returned as {"error": ...}, not recorded."""
    record_path = os.path.join(record_dir, run.name + ".json")
    digest = run_digest(run, settings)
    record = current_record(record_path, digest)
    if record:
        return record
    shared = settings.shared_data
    root = os.path.join(settings.workdir, settings.digest)
    workdir = os.path.join(root, run.name)
    if run.variant.ensemble_of:
        return perform_ensemble(run, settings, record_path, root, workdir, digest)
    os.makedirs(workdir, exist_ok=True)
    train = train_command(run, shared, root, settings.config)
    # Only the main SNLI runs need predictions (paired tests) and MultiNLI; SICK and the
    # learning curve read train's own results.json.
    evaluate = evaluate_command(run, shared, root) if run.task == "snli" else None
    steps = [(train, os.path.join(workdir, rundir.RESULTS))]
    if evaluate:
        steps.append((evaluate, evaluation_path(root, run)))
    started, trained_here = time.perf_counter(), False
    for argv, done in steps:
        if not os.path.exists(done):
            trained_here |= argv is train
            error = cluster.run_program(argv, log_path(root, run), threads)
            if error:
                return {"error": error, "command": shown(argv)}
    record = summarize(run, workdir, shared, evaluation_path(root, run))
    wall = time.perf_counter() - started
    # Epochs trained by an earlier invocation count too: all of them when this one only
    # evaluated, those before the checkpoint this one resumed from.
    epochs_time = record["seconds_per_epoch"] * record["epochs"]
    wall = max(wall, epochs_time) if trained_here else wall + epochs_time
    record.update(command=shown(train), wall_seconds=wall, config_digest=digest,
                  cores=threads or os.cpu_count(), machine_cores=os.cpu_count(),
                  made_by=machine.describe())
    if evaluate:
        record["evaluate_command"] = shown(evaluate)
    write_json(record_path, record)
    return record


def perform_ensemble(run, settings, record_path, root, workdir, digest):
    """An ensemble row's record: `dsan-ensemble` over the member rows' run
    directories (which must still exist: a record keeps predictions, not models)."""
    seeds = member_seeds(run.variant, settings.max_seeds)
    members = [os.path.join(root, "snli", run.variant.ensemble_of, f"seed{seed}")
               for seed in seeds]
    missing = [m for m in members if not os.path.exists(os.path.join(m, rundir.RESULTS))]
    if missing:
        return {"error": f"needs the trained run directories {missing} (train them with "
                         f"--variants={run.variant.ensemble_of} on this machine first)"}
    os.makedirs(workdir, exist_ok=True)
    output = os.path.join(workdir, "ensemble.json")
    shared = settings.shared_data
    argv = [sys.executable, "-m", "dsan_tf.programs.ensemble", *[f"--workdir={m}" for m in members],
            *[f"--data={os.path.join(shared, s)}" for s in (SNLI["dev_data"], MULTINLI)],
            "--save_predictions", f"--output={output}"]
    started = time.perf_counter()
    if not os.path.exists(output):
        error = cluster.run_program(argv, log_path(root, run))
        if error:
            return {"error": error, "command": shown(argv)}
    sources = read_json(output)["sources"]
    dev = sources[os.path.join(shared, SNLI["dev_data"])]["ensemble"]
    # The members' records sit beside this one's directory, which may not exist yet.
    rows = os.path.dirname(os.path.dirname(record_path))
    member_records = [read_json(os.path.join(rows, run.variant.ensemble_of, f"seed{seed}.json"))
                      for seed in seeds]
    record = {"run": run.name, "variant": run.variant.key, "seed": run.seed, "task": run.task,
              "params": sum(r["params"] for r in member_records), "best_epoch": None,
              "epochs": 0, "seconds_per_epoch": None,
              "snli_dev_accuracy": dev["accuracy"], "snli_dev_predictions": dev["predictions"],
              "snli_dev_labels": dev["labels"],
              "multinli_accuracy": sources[os.path.join(shared, MULTINLI)]["ensemble"]["accuracy"],
              "member_seeds": list(seeds),
              "command": shown(argv), "wall_seconds": time.perf_counter() - started,
              "config_digest": digest}
    write_json(record_path, record)
    return record


def summarize(run, workdir, shared, evaluation):
    """What the table needs from a finished run directory (and its `evaluation`'s file,
    for a main SNLI run)."""
    trained = read_json(os.path.join(workdir, rundir.RESULTS))
    record = {"run": run.name, "variant": run.variant.key, "seed": run.seed, "task": run.task,
              "params": trained["parameters"]["params_excluding_embeddings"],
              "best_epoch": trained["best_epoch"], "epochs": trained["epochs"],
              "seconds_per_epoch": trained["seconds_per_epoch"],
              "dev_accuracy": trained["dev_accuracy"]}
    if "test_accuracy" in trained:
        record["test_accuracy"] = trained["test_accuracy"]
    # Per epoch: train loss and accuracy, dev loss and accuracy, learning rate, steps so
    # far, seconds; under- and over-fitting show here, not in the final numbers.
    record["history"] = read_history(os.path.join(workdir, rundir.HISTORY))
    if run.task == "snli":
        sources = read_json(evaluation)["sources"]
        dev = sources[os.path.join(shared, SNLI["dev_data"])]
        record.update(snli_dev_accuracy=dev["accuracy"], snli_dev_predictions=dev["predictions"],
                      snli_dev_labels=dev["labels"],
                      multinli_accuracy=sources[os.path.join(shared, MULTINLI)]["accuracy"])
    elif run.task.startswith("curve"):  # selected and reported on SNLI dev, as the main runs
        record["snli_dev_accuracy"] = trained["dev_accuracy"]
    return record


def check_inputs(shared, chosen):
    """Every shared file the study needs exists, and every --variants row is known."""
    for path in study_inputs(shared):
        if not os.path.exists(path):
            raise program.UsageError(f"{path} does not exist: point --shared_data at the "
                                     "shared data directory.")
    known = [v.key for v in VARIANTS]
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise program.UsageError(f"unknown --variants {unknown}; choose from {known}.")


def resolved_paths(values):
    """The study's folders and files from the flags `values`, absolute (a run reads and
    writes them on whichever node Ray puts it, whose folder is not this one); the outputs
    default under --workdir, never onto the committed docs."""
    workdir = os.path.abspath(values.workdir)
    defaults = {"output": "RESULTS.md", "json_output": "results.json",
                "curve_output": "learning_curve.png", "history_output": "training_curves.png",
                "record_dir": "records"}
    paths = {name: os.path.abspath(values[name].value or os.path.join(workdir, default))
             for name, default in defaults.items()}
    return dict(paths, workdir=workdir, shared_data=os.path.abspath(values.shared_data),
                config=os.path.abspath(values.config))


@program.main
def main(argv):
    program.check_start(argv, workdir="where the study's runs are kept")
    chosen = FLAGS.variants or [v.key for v in VARIANTS]
    check_inputs(FLAGS.shared_data, chosen)
    if not os.path.isfile(FLAGS.config):
        raise program.UsageError(f"--config={FLAGS.config} does not exist.")
    try:
        sizes = [int(size) for size in FLAGS.curve_sizes]
    except ValueError:
        raise program.UsageError("--curve_sizes must be integers separated by commas.") from None
    resources = {"cpus": FLAGS.cpus_per_run, "gpus": FLAGS.gpus_per_run}
    cluster.task_options(resources["cpus"], resources["gpus"])  # a mistake: before Ray starts
    from experiments import study_report  # NumPy and matplotlib load here, not for --help

    paths = resolved_paths(FLAGS)
    settings = Settings(paths["workdir"], paths["shared_data"], paths["config"], paths["output"],
                        paths["json_output"], paths["curve_output"],
                        config_digest(paths["config"]), FLAGS.max_seeds,
                        paths["history_output"], program.command_line())
    record_dir = paths["record_dir"]
    variants = [v for v in VARIANTS if v.key in chosen]
    runs = plan(variants, FLAGS.max_seeds, sizes, FLAGS.sick)
    records = recorded_runs(runs, settings, record_dir)
    started = time.perf_counter()
    study_report.write(records, variants, sizes, settings, 0.0)
    failed = {}
    if not FLAGS.report_only:
        # Recorded runs are reused as they are; the table is rewritten after each new one.
        todo = [run for run in runs if run.name not in records and not run.variant.kept]
        print(f"{len(runs) - len(todo)} of {len(runs)} runs recorded; training the other "
              f"{len(todo)} on Ray, each with {FLAGS.cpus_per_run:g} CPU(s) and "
              f"{FLAGS.gpus_per_run:g} GPU(s).", flush=True)
        if todo:
            seconds = cluster.connect(FLAGS.ray_address, resources["gpus"])
            cluster.check_resources(resources["cpus"], resources["gpus"])
            nodes = cluster.check_nodes(
                [settings.workdir, record_dir],
                reads=study_inputs(settings.shared_data))
            print(f"Ray: {nodes} node(s), ready in {seconds:.1f} s", flush=True)
            failed = perform_all(todo, records, settings, record_dir, resources,
                                 lambda done: study_report.write(done, variants, sizes, settings,
                                                                 time.perf_counter() - started))
    print(f"table: {settings.output}; {settings.json_output}; {settings.curve_output}")
    if failed:
        for name, error in failed.items():
            print(f"failed: {name}: {error}")
        program.fail(f"{len(failed)} of {len(todo)} runs failed (each above, with its log); "
                     "the same command trains them again once their cause is fixed.")


def recorded_runs(runs, settings, record_dir):
    """{run name: record} of the `runs` recorded under this configuration (the table shows
    them from the start, not only those reached so far); says how many records were made
    under another."""
    recorded = {run.name: os.path.join(record_dir, run.name + ".json") for run in runs}
    records = {run.name: current_record(recorded[run.name], run_digest(run, settings),
                                        bool(run.variant.kept))
               for run in runs}
    stale = [name for name, record in records.items()
             if record is None and os.path.exists(recorded[name])]
    if stale:
        print(f"{len(stale)} records were made under another {settings.config}; their runs "
              "are trained again.", flush=True)
    return {name: record for name, record in records.items() if record}


def study_inputs(shared):
    """The shared files a study's runs read (absolute from `shared`)."""
    return [os.path.join(shared, spec)
            for spec in (GLOVE, MULTINLI, *SNLI.values(), *SICK.values())]


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
