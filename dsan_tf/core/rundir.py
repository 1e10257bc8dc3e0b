"""The run directory that train writes and evaluate, export, predict and visualize read,
and the file names of an export (`dsan_tf.saving.export` writes it): every name, in one place.

    WORKDIR/flags.txt        the configuration as flags, usable as --flagfile to repeat it
    WORKDIR/config.json      the configuration (model, model_config, data, training: what
                             the run is, compared with a re-run's) and what the run found
                             (vocabulary size, word vectors, parameters, data read, ...)
    WORKDIR/vocab.json       the vocabulary, and preprocessor.json the truncation length
                             (together: dsan_tf.data.NLIPreprocessor)
    WORKDIR/best.keras       the model with the best dev accuracy; best.json says when
    WORKDIR/history.csv      per-epoch metrics and seconds
    WORKDIR/checkpoints/     the record of what is done: epoch-N/ holds the state after
                             epoch N (weights, optimizer, random states, the history rows
                             and the best epoch); the newest complete one is the truth, and
                             history.csv, best.keras and TensorBoard are rewritten from it
                             when a killed run resumes (`dsan_tf.training.run_state`)
    WORKDIR/lock             held (an OS file lock) by the process training the run
    WORKDIR/tensorboard/     TensorBoard logs (train, validation, hparams)
    WORKDIR/results.json     final dev (and test) metrics of the best model
    WORKDIR/MODEL_CARD.md    what the model is, how well it did, how to repeat it

An export (EXPORT_DIR/<version>/) holds the SavedModel, `model.keras` (a copy of
best.keras), vocab.json, preprocessor.json and MODEL_CARD.md; an ensemble's adds
members/<i>/ with each member's export files.

Nothing here loads TensorFlow until a model is loaded (the study tools read histories).
"""

import csv
import dataclasses
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

from dsan_tf import data
from dsan_tf.common import atomic
from dsan_tf.common.errors import UsageError
from dsan_tf.core.config import ExperimentConfig, RunPolicy
from dsan_tf.models.config import described_fields
from dsan_tf.version import __version__

CONFIG, BEST, BEST_INFO = "config.json", "best.keras", "best.json"
# The preprocessor's files (its own names: the data package writes and reads them).
VOCAB, PREPROCESSOR = data.VOCABULARY_FILE, data.PREPROCESSOR_FILE
MODEL, MEMBERS = "model.keras", "members"  # an export's model and ensemble members
HISTORY, RESULTS, FLAGFILE = "history.csv", "results.json", "flags.txt"
CARD, CHECKPOINTS, TENSORBOARD = "MODEL_CARD.md", "checkpoints", "tensorboard"
LOCK = "lock"
LOG = "train.log"  # what train printed, each start appended (dsan_tf.common.console)
# A checkpoint's files (CHECKPOINTS/epoch-N/): the record, the training state (weights and
# optimizer), the layers' random states and the best model so far.
RECORD, STATE, SEEDS = "record.json", "state.weights.h5", "seeds.npz"
# Where dsan_tf 0.4 and earlier kept Keras' BackupAndRestore state (removed by --overwrite).
LEGACY_BACKUP = "backup"
# Everything train writes into a run directory (--overwrite removes these, nothing else;
# the lock stays: another process may be waiting on it).
RUN_FILES = (FLAGFILE, CONFIG, VOCAB, PREPROCESSOR, BEST, BEST_INFO, HISTORY, RESULTS, CARD,
             CHECKPOINTS, LEGACY_BACKUP, TENSORBOARD, LOG)
# The records a program other than train must never write over (`--output`).
RECORDS = (FLAGFILE, CONFIG, VOCAB, PREPROCESSOR, BEST, BEST_INFO, HISTORY, RESULTS, CARD,
           LOCK, LOG)
# The configuration's parts in config.json (`ExperimentConfig.to_dict`); beside them its
# "policy" (`RunPolicy`, how it ran) and what the run found.
CONFIG_PARTS = ("model", "model_config", "data", "training")
# Fields a run may go on with changed: where files are and more epochs (more epochs train
# a finished run on: docs/TRAINING.md). How it runs may change too (a run started on a GPU
# goes on on a CPU), but `RunPolicy.SAME_RUN`.
MAY_CHANGE = ("tfds_data_dir", "embeddings_cache_dir", "epochs")


def flag_values(config):
    """{name: value} of `config`'s fields that are flags (its family's, data's, training's;
    not `vocab_size` or `num_classes`), "model" first."""
    flagged = {field.name for part in (config.model_config, config.data, config.training)
               for field in described_fields(type(part))}
    return {name: value for name, value in config.flat().items()
            if name == "model" or name in flagged}


def as_flag(name, value):
    """`--name=value`, `--name` or `--noname` (booleans); None for an unset value."""
    if isinstance(value, bool):
        return f"--{'' if value else 'no'}{name}"
    return None if value is None else f"--{name}={value}"


def flag_lines(config, policy=None):
    """The lines of flags.txt: every field of `config` (`ExperimentConfig`) that is a flag
    and the `RunPolicy` fields that differ from their defaults, as flags that repeat the
    run (`--flagfile=flags.txt`)."""
    values = flag_values(config)
    if policy is not None:
        defaults = type(policy)()
        values.update({f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)
                       if getattr(policy, f.name) != getattr(defaults, f.name)})
    return [line for line in (as_flag(n, v) for n, v in values.items()) if line]


def is_run_directory(path):
    """Whether `path` is a run directory of dsan-train (its config.json and what
    training writes beside it)."""
    return os.path.isfile(os.path.join(path, CONFIG)) and any(
        os.path.lexists(os.path.join(path, name))
        for name in (BEST, HISTORY, CHECKPOINTS, LOCK, LEGACY_BACKUP))


def enclosing_run(path):
    """The run directory that holds `path` (itself or a folder above it), or None."""
    path = os.path.abspath(path)
    while True:
        if is_run_directory(path):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def recorded_config(values, path=CONFIG):
    """The `ExperimentConfig` a config.json's `values` hold, or None where it holds none
    (a run directory of dsan_tf 0.2 and earlier); `UsageError` naming `path` where a part
    is not what a configuration holds (a file edited by hand)."""
    if not isinstance(values, dict) or not all(part in values for part in CONFIG_PARTS):
        return None
    try:
        return ExperimentConfig.from_dict({part: values[part] for part in CONFIG_PARTS})
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise UsageError(f"{path} does not hold a run's configuration ({error}); was it "
                         "edited by hand?") from None


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A committed epoch (`RunDirectory.checkpoint`): its folder and its record.json
    ({"epochs", "steps", "history", "best", "files"})."""

    path: str
    record: dict

    @property
    def epochs(self):
        return self.record["epochs"]

    def file(self, name):
        return os.path.join(self.path, name)


def checkpoint_name(epochs):
    """The folder of the checkpoint after `epochs` epochs (sorts by epoch)."""
    return f"epoch-{epochs:06d}"


def weights_digest(model):
    """SHA-256 of a model's weights (results.json's best_weights_sha256, to compare runs
    and to check a best model against its record)."""
    import numpy as np

    digest = hashlib.sha256()
    for weights in model.get_weights():
        digest.update(np.ascontiguousarray(weights).tobytes())
    return digest.hexdigest()


def file_digest(path):
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class RunDirectory:
    """Paths and files of one run directory.

    Args:
        workdir: the directory (`claim` makes it for dsan-train).
    """

    def __init__(self, workdir):
        if not workdir:
            raise UsageError("give --workdir, the run directory of dsan-train.")
        self.workdir = workdir
        self._lock = None
        self._verified = None  # the checkpoint `checkpoint` last found whole
        # The newest epoch a damaged checkpoint had committed, once one was passed over.
        self.fell_back_from = None

    def path(self, name):
        return os.path.join(self.workdir, name)

    def exists(self, name):
        return os.path.exists(self.path(name))

    def write_json(self, name, value):
        write_json(self.path(name), value)

    def read_json(self, name):
        return read_json(self.path(name))

    # The lock: one process trains a run directory at a time.

    def lock(self):
        """Takes the run's lock (an OS file lock on WORKDIR/lock, which the kernel releases
        when this process ends, however it ends), making the directory; `UsageError`
        naming the process that holds it. Held until `unlock`."""
        os.makedirs(self.workdir, exist_ok=True)
        path = self.path(LOCK)
        while True:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(descriptor)
                raise UsageError(f"workdir {self.workdir} is being trained by "
                                 f"{self.holder() or 'another process'}; wait for it to "
                                 "end, or give another workdir.",
                                 fields=("workdir",)) from None
            # A process that removed the lock file (an emptied first run) before we locked
            # it leaves us holding a file nobody else sees: lock the one there now.
            if os.path.exists(path) and os.path.samestat(os.fstat(descriptor), os.stat(path)):
                break
            os.close(descriptor)
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"process {os.getpid()} ({' '.join(sys.argv)[:200]})\n".encode())
        self._lock = descriptor

    def unlock(self, remove=False):
        """Releases the lock (`remove`: and its file, before the folder goes)."""
        if self._lock is not None:
            if remove and os.path.exists(self.path(LOCK)):
                os.remove(self.path(LOCK))
            os.close(self._lock)
            self._lock = None

    def holder(self):
        """"process PID (command)" of the process that holds the lock, or None when none
        does (the run is not being trained)."""
        path = self.path(LOCK)
        if self._lock is not None or not os.path.isfile(path):
            return None
        descriptor = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            return _lock_holder(os.fstat(descriptor)) or \
                os.read(descriptor, 400).decode("utf-8", "replace").strip() or \
                "another process"
        finally:
            os.close(descriptor)

    # The record of what is done.

    def checkpoint(self, say=print):
        """The newest intact checkpoint (`Checkpoint`), or None before any epoch is
        committed. A checkpoint whose files are not those its record lists (damaged after
        it was written) is passed over, saying so, and the newest intact one before it is
        the run's state: the epochs after it are trained again. The process that holds the
        lock moves a damaged one aside to epoch-N.damaged (its epoch is committed anew
        there); a reader leaves it. Where checkpoints are there but none is intact,
        `UsageError` naming each and its fault, and nothing is moved: no committed epoch
        is discarded without the user's overwrite."""
        folder = self.path(CHECKPOINTS)
        names = sorted((name for name in os.listdir(folder) if name.startswith("epoch-")
                        and name[6:].isdigit()), reverse=True) if os.path.isdir(folder) else []
        faults = []
        for name in names:
            path = os.path.join(folder, name)
            if self._verified is not None and self._verified.path == path:
                return self._verified  # its files were read whole once: not hashed again
            fault = _checkpoint_fault(path)
            if fault is None:
                self._verified = Checkpoint(path, read_json(os.path.join(path, RECORD)))
                # The damaged ones passed over, and any moved aside before (by a process
                # stopped since), had committed epochs past it.
                passed = [int(os.path.basename(path)[6:]) for path, _ in faults]
                aside = [int(name[6:-8]) for name in os.listdir(folder)
                         if name.endswith(".damaged") and name[6:-8].isdigit()]
                newer = [epochs for epochs in passed + aside if epochs > self._verified.epochs]
                self.fell_back_from = max(newer) if newer else None
                self._say_fallback(faults, self._verified, say)
                return self._verified
            faults.append((path, fault))
        if faults:
            shown = "; ".join(f"{path}: {fault}" for path, fault in faults)
            raise UsageError(f"no checkpoint of {self.workdir} is intact ({shown}), so its "
                             "committed epochs cannot be resumed and nothing was changed; "
                             "put the checkpoints back from a copy, or overwrite to train "
                             "afresh.", fields=("workdir", "overwrite"))
        return None

    def _say_fallback(self, faults, intact, say):
        """Says which damaged checkpoints `checkpoint` passed over for `intact`, moving
        them aside where this process holds the lock."""
        for path, fault in faults:
            if self._lock is None:
                say(f"checkpoint {path} is damaged ({fault}); the run's state is "
                    f"{intact.path}, the newest intact one.")
                continue
            aside = path + ".damaged"
            shutil.rmtree(aside, ignore_errors=True)
            os.replace(path, aside)
            say(f"checkpoint {path} is damaged ({fault}); moved to {aside}, and the run "
                f"goes on from {intact.path}, the newest intact checkpoint.")

    def epochs_done(self):
        """Epochs the run has committed (its newest checkpoint's record); for a run of
        dsan_tf 0.4 and earlier, which kept no record, its history.csv's rows."""
        checkpoint = self.checkpoint()
        if checkpoint is not None:
            return checkpoint.epochs
        return len(read_history(self.path(HISTORY))) if self.exists(LEGACY_BACKUP) else 0

    def claim(self, config, policy=None, overwrite=False):
        """Makes this directory the run of `config` (`ExperimentConfig`, resolved), before
        anything else is written; the caller holds the lock (`lock`). A new or emptied
        directory, or one whose run committed no epoch, gets config.json (the
        configuration and `policy`, `RunPolicy` resolved) and flags.txt (the same as
        flags). A directory whose config.json holds the same configuration, field by field
        but `MAY_CHANGE`, and the same policy's `RunPolicy.SAME_RUN`, is that run:
        "resume" (no results.json yet), "finished", or "extend" (finished after all its
        epochs, and `config` asks for more). Any other configuration is
        refused with one sentence naming each differing field and both values, so that a
        directory never describes a model it does not hold. `overwrite` first removes what
        an earlier run wrote (train's files, nothing else).

        A finished run whose newest checkpoint is damaged trains again from the newest
        intact one ("resume", or "extend"); one whose results.json is damaged is evaluated
        again ("evaluate").

        Returns: "new", "resume", "extend", "evaluate" or "finished".
        """
        for name in (CHECKPOINTS, TENSORBOARD, BEST):
            if os.path.islink(self.path(name)) and not overwrite:
                raise UsageError(f"{self.path(name)} is a symbolic link: a run writes only "
                                 "inside its own directory; remove the link, or overwrite to "
                                 "start afresh.", fields=("workdir", "overwrite"))
        if not overwrite and self.exists(CONFIG) and (
                self.exists(RESULTS) or self.epochs_done()):
            return self._same_run(config, policy)
        if overwrite or self.exists(CONFIG):  # nothing committed: nothing to keep
            self.discard()
        elif any(self.exists(name) for name in (FLAGFILE, BEST, HISTORY, LEGACY_BACKUP)):
            raise UsageError(f"workdir {self.workdir} holds files of a run but no "
                             f"{CONFIG}, so it cannot be resumed safely; give another "
                             "workdir, or overwrite to replace it.",
                             fields=("workdir", "overwrite"))
        os.makedirs(self.workdir, exist_ok=True)
        self.record(config, policy)
        return "new"

    def record(self, config, policy=None):
        """Writes config.json's configuration and policy (keeping what the run found) and
        flags.txt."""
        found = self.read_json(CONFIG) if self.exists(CONFIG) else {}
        ran = {"policy": policy.to_dict()} if policy is not None else {}
        self.write_json(CONFIG, {**found, **config.to_dict(), **ran})
        atomic.write_text(self.path(FLAGFILE), "\n".join(flag_lines(config, policy)) + "\n")

    def _same_run(self, config, policy):
        """`claim` of a directory that holds a run: its state, or the refusal."""
        values = self.read_json(CONFIG)
        recorded = recorded_config(values, self.path(CONFIG))
        if recorded is None:
            raise UsageError(f"workdir {self.workdir} holds a run of dsan_tf 0.2 or earlier, "
                             f"whose {CONFIG} does not record its whole configuration, so a "
                             "re-run cannot be compared with it; give another workdir, or "
                             "overwrite to replace it.", fields=("workdir", "overwrite"))
        changed = [(name, there, now) for name, there, now in recorded.differences(config)
                   if name not in MAY_CHANGE or (name == "epochs"
                                                 and not config.training.epochs_may_change())]
        ran = RunPolicy.from_record(values)
        if ran is not None and policy is not None:
            changed += [(name, getattr(ran, name), getattr(policy, name))
                        for name in RunPolicy.SAME_RUN
                        if getattr(ran, name) != getattr(policy, name)]
        if any(name == "model" for name, _, _ in changed):
            # Another family: its hyperparameters differ as a matter of course, and the
            # one line a user needs is the model's.
            hyperparameters = {field.name for model in (recorded, config)
                               for field in dataclasses.fields(model.model_config)}
            changed = [item for item in changed if item[0] not in hyperparameters]
        if changed:
            shown = "; ".join(f"{name}: {there} there, {now} now"
                              for name, there, now in changed)
            raise UsageError(
                f"workdir {self.workdir} holds a run of another configuration ({shown}); "
                "give another workdir for a new run, or overwrite to replace this one.",
                fields=("workdir", "overwrite", *(name for name, _, _ in changed)))
        return self._state(config, recorded, policy)

    def _state(self, config, recorded, policy):
        """`claim`'s state of a directory that holds this run (`recorded`, the
        configuration its config.json holds), recording `config` where it trains on."""
        done = self.epochs_done()
        if config.training.epochs < done:
            # Its best model may come from a later epoch.
            raise UsageError(
                f"workdir {self.workdir} holds {done} trained epoch(s): epochs="
                f"{config.training.epochs} asks for fewer, and a run cannot be made shorter; "
                "give another workdir, or overwrite to train afresh.",
                fields=("workdir", "overwrite", "epochs"))
        state = "resume"
        if self.fell_back_from and self.exists(RESULTS):
            # A finished run whose newest checkpoint was damaged trains the epochs after
            # the intact one again (to the same numbers), then is evaluated again.
            state = "extend" if config.training.epochs > self.fell_back_from else "resume"
        elif self.exists(RESULTS):
            ran_all = done >= recorded.training.epochs  # not stopped early by patience
            state = "extend" if ran_all and config.training.epochs > done else "finished"
            if state == "finished" and self.results_fault():
                state = "evaluate"
        if state != "finished" and self.checkpoint() is None:
            raise UsageError(f"workdir {self.workdir} was trained by dsan_tf 0.4 or earlier, "
                             "whose checkpoint cannot be resumed exactly; give another "
                             "workdir, or overwrite to train afresh.",
                             fields=("workdir", "overwrite"))
        if state != "finished":
            self.record(config, policy)
        return state

    def results_fault(self):
        """What is wrong with results.json (not JSON, not a run's results), or None."""
        try:
            results = self.read_json(RESULTS)
        except UsageError as error:
            return str(error).rstrip(".")
        if not isinstance(results, dict) or "dev_accuracy" not in results:
            return f"{self.path(RESULTS)} does not hold a run's results"
        return None

    def discard(self, remove_directory=False):
        """Removes what train writes here (`RUN_FILES`), and the directory itself when
        `remove_directory` and nothing else is left in it. A symbolic link among them is
        removed itself, never what it points to."""
        for name in RUN_FILES:
            path = self.path(name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.remove(path)
        if (remove_directory and os.path.isdir(self.workdir)
                and set(os.listdir(self.workdir)) <= {LOCK}):
            self.unlock(remove=True)
            if not os.listdir(self.workdir):
                os.rmdir(self.workdir)

    def require_finished(self, unfinished_ok=True):
        """`UsageError` unless this directory holds a trained model. A run still training
        (its lock held) or stopped before its end (no results.json) holds its best model
        so far: `unfinished_ok` False refuses it, True says so on stderr."""
        for name in (CONFIG, VOCAB, PREPROCESSOR, BEST):
            if not self.exists(name):
                raise UsageError(f"{self.path(name)} does not exist: is {self.workdir} a "
                                 "finished dsan-train run (--workdir)?")
        unfinished = self.unfinished()
        if unfinished and not unfinished_ok:
            raise UsageError(f"{unfinished}: its best.keras is the best model so far, not "
                             "the run's; export it when the run is done, or give "
                             "unfinished to export it now.", fields=("unfinished",))
        self.say_if_unfinished()

    def say_if_unfinished(self):
        """Says on stderr when the run is not finished (`unfinished`): its best model is
        the best so far."""
        unfinished = self.unfinished()
        if unfinished:
            print(f"note: {unfinished}; this is its best model so far.", file=sys.stderr)

    def unfinished(self):
        """Why the run is not finished, as a clause ("WORKDIR is still being trained by
        process P (...)", "WORKDIR stopped before its end (it has no results.json)"), or
        None."""
        holder = self.holder()
        if holder:
            return f"{self.workdir} is still being trained by {holder}"
        if not self.exists(RESULTS):
            return f"{self.workdir} stopped before its end (it has no results.json)"
        return None

    def load(self, unfinished_ok=True):
        """(`NLIClassifier`, its `NLIPreprocessor`, config dict) of a trained run: its
        model from the one loader (`dsan_tf.models.preset.load`, for inference: the
        optimizer's state, a loss-scale wrapper under mixed_float16, is not read)."""
        from dsan_tf.models import preset  # Keras loads here

        self.require_finished(unfinished_ok)
        model = preset.load(self.workdir, compile=False)
        return model, model.preprocessor, self.read_json(CONFIG)


def _lock_holder(stat):
    """"process PID (command)" of the process the kernel says holds the lock on the file
    of `stat` (Linux's /proc/locks: the truth, where the lock file's text is only what its
    writer wrote), or None where that cannot be read."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as stream:
            lines = stream.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or "->" in fields:
            continue
        device = fields[5].split(":")
        if len(device) == 3 and int(device[2]) == stat.st_ino and \
                int(device[0], 16) == os.major(stat.st_dev) and \
                int(device[1], 16) == os.minor(stat.st_dev):
            pid = fields[4]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as stream:
                    command = stream.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                command = ""
            return f"process {pid} ({command.strip()[:200]})" if command.strip() else \
                f"process {pid}"
    return None


def _checkpoint_fault(path):
    """What is wrong with the checkpoint folder `path` (its record unreadable, a file
    missing, or of other size or bytes than the record lists), or None."""
    try:
        record = read_json(os.path.join(path, RECORD))
        files = record["files"]
        for name, (size, digest) in files.items():
            file = os.path.join(path, name)
            if not os.path.isfile(file):
                return f"{name} is missing"
            if os.path.getsize(file) != size or file_digest(file) != digest:
                return f"{name} is not the file its {RECORD} lists"
        missing = [key for key in ("epochs", "history", "best") if key not in record]
        if missing:
            return f"its {RECORD} has no {', '.join(missing)}"
    except (UsageError, OSError, KeyError, TypeError, ValueError) as error:
        return str(error)
    return None


def write_json(path, value):
    """Writes atomically (a reader never sees half a file), making the directory."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    atomic.write_text(path, json.dumps(value, indent=2, sort_keys=True))


def history_columns(rows):
    """history.csv's columns: "epoch", then every other key of `rows`, sorted."""
    return ["epoch", *sorted({key for row in rows for key in row} - {"epoch"})]


def history_text(rows):
    """The text of history.csv holding `rows` (dicts with "epoch" from 1)."""
    stream = io.StringIO()
    writer = csv.DictWriter(stream, history_columns(rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return stream.getvalue()


def write_history(path, rows):
    """Writes history.csv (atomically) holding `rows`."""
    atomic.write_text(path, history_text(rows))


def read_history(path):
    """Rows of history.csv as dicts of floats (epoch and steps as int), epochs counted from
    1; [] when there is none. Files written before epochs were counted from 1 (their first
    epoch is 0) are read the same way. `UsageError` naming the file and line of a row that
    is not numbers (a file cut off or edited by hand)."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="", encoding="utf-8", errors="replace") as stream:
        for line, row in enumerate(csv.DictReader(stream), 2):
            try:
                rows.append({k: (int(float(v)) if k in ("epoch", "steps") else float(v))
                             for k, v in row.items()})
            except (TypeError, ValueError):
                raise UsageError(f"{path}, line {line}, is not a row of numbers under the "
                                 "header's columns: was the file cut off or edited?") from None
    if rows and rows[0].get("epoch") == 0:
        for row in rows:
            row["epoch"] += 1
    return rows


def read_json(path):
    """The JSON value in `path`; `UsageError` naming the file and where it breaks when it
    is not JSON (a file cut off by a killed process, or edited by hand)."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not JSON: it is not even UTF-8 text.") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not a JSON file.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # A record file ends with its closing bracket; one that does not was cut short.
        ending = ("; the file ends before its closing bracket: was it cut off?"
                  if not text.rstrip().endswith(("}", "]")) else ".")
        raise UsageError(f"{path} is not valid JSON ({error.msg}: line {error.lineno}, "
                         f"column {error.colno}){ending}") from None


def git_commit(path):
    """The commit of the checkout holding `path` ("-dirty" when files differ from it), or
    None outside a checkout (an installed package) or without git."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                              cwd=path, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance():
    """What produced a result: package versions (Keras, its backend and that backend's
    framework; TensorFlow's where it is loaded) and, in a git checkout, the commit (with
    "-dirty" when files differ from it)."""
    # Loaded by the run that asks; kept out of the study tools' start.
    from dsan_tf.common.frameworks import keras

    backend = keras.backend.backend()
    framework = sys.modules.get(backend)
    tf = sys.modules.get("tensorflow")

    return {"dsan_tf": __version__,
            "git_commit": git_commit(os.path.dirname(os.path.abspath(__file__))),
            "tensorflow": tf.__version__ if tf else None, "keras": keras.__version__,
            "keras_backend": backend,
            "backend_version": getattr(framework, "__version__", None)}
