"""What every program does the same way: start, check its flags, load TensorFlow quietly,
and stop with one sentence (no traceback) on a user's mistake.

Library code raises (`dsan_tf.common.errors.UsageError`, `dsan_tf.data.DataError`,
ValueError for bad model settings); only `main` turns that into an exit. Flag values are
checked while flags are parsed (absl's `lower_bound`, `flags.require_existing`), before
TensorFlow loads.
"""

import functools
import json
import os
import re
import shlex
import sys

from absl import app, flags, logging

from dsan_tf.common import atomic, interrupt, quiet
from dsan_tf.common.errors import UsageError
from dsan_tf.data.examples import DataError
from dsan_tf.programs import flags as project_flags

FLAGS = project_flags.FLAGS


def sentence(text):
    """`text` as one sentence: one full stop at its end unless it ends in '.', '?' or '!',
    absl's "Did you mean: epochs ?" closed up and its "ERROR::" prefix dropped; nothing else in it changes (paths such
    as ../shared/... stay as given)."""
    text = re.sub(r"^ERROR::?\s*", "", re.sub(r"\s+\?$", "?", text.strip()))
    # A check of several flags that names its flags itself: absl's list of their values
    # before it ("flags a=1, b=2: --a=1 is ...") says nothing more.
    text = re.sub(r"^flags \w+=.*?: (--\w+=)", r"\1", text, count=1, flags=re.S)
    # A list flag's missing value (`flags.require_existing`): named as a value of the flag,
    # not as absl's Python list (`--data=['a.jsonl', 'b.jsonl']`).
    text = re.sub(r"^flag (--[\w-]+)=\[.*\]: (.+): (no such \w+|a \w+, not a \w+)$",
                  r"flag \1=\2: \3", text, flags=re.S)
    return text if text.endswith((".", "?", "!")) else text + "."


class Interrupted(Exception):
    """Ctrl-C, with what the user should know (e.g. the command that resumes)."""


def command_line():
    """The command that started this program, as a user would type it again."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    start = f"python -m {spec.name}" if spec and spec.name else os.path.basename(sys.argv[0])
    return " ".join([start, *map(shlex.quote, sys.argv[1:])])


def fail(message):
    """Stops the program with one clear sentence, no traceback."""
    sys.exit(f"error: {message}")


def system_fault(error, kept=None):
    """One sentence for an `OSError` of the machine (a full disk, a read-only folder):
    the path, the fault, and what was kept (`kept`; by default that every file is written
    whole or not at all, so what was there before stays)."""
    where = " -> ".join(str(name) for name in (error.filename, error.filename2) if name)
    fault = error.strerror or str(error)
    kept = kept or ("every file is written whole or not at all, so the files there before "
                    "are kept as they were")
    return sentence(f"could not write {where or 'a file'}: {fault}; {kept}")


# What --workdir names in the programs that read a trained model, and in those that read a
# run's own record (`check_start`'s words).
TRAINED_MODEL = "a finished run, an export or a trained preset's name"
RUN_DIRECTORY = "a dsan-train run directory"


def check_start(argv, **required):
    """No positional arguments, and each required flag given (`name="what to give"`)."""
    if len(argv) > 1:
        raise UsageError(f"unexpected arguments {argv[1:]}; every option is a --flag.")
    for name, what in required.items():
        if not FLAGS[name].value:
            raise UsageError(f"give --{name}, {what}.")


def write_output(results):
    """Writes `results` as JSON to --output, when the program has that flag and it is
    given, and says where."""
    if "output" in FLAGS and FLAGS.output:
        atomic.write_text(FLAGS.output, json.dumps(results, indent=2))
        print(f"metrics: {FLAGS.output}")


def verbose():
    """Whether the user asked for more than warnings (`--verbosity=0` or higher)."""
    return FLAGS["verbosity"].present and FLAGS.verbosity >= 0


def load_tensorflow(tensorflow=True):
    """Imports Keras (and TensorFlow, unless `tensorflow=False`: Keras still loads it when
    it is the backend) without their start-up log lines (`dsan_tf.common.quiet`) unless
    `--verbosity` asks for them."""
    quiet.load_frameworks(tensorflow or None, verbose=verbose())


def _load_backend(tensorflow):
    """`load_tensorflow`, with a missing framework said in one sentence."""
    try:
        load_tensorflow(tensorflow)
    except ImportError as error:
        backend = os.environ.get("KERAS_BACKEND", "tensorflow")
        hint = {"jax": " (pip install -r requirements-jax.txt)"}.get(backend, "")
        raise UsageError(f"KERAS_BACKEND={backend} needs {error.name or backend} installed"
                         f"{hint}: {error}") from None


def main(function=None, *, tensorflow=True, required=None, check=None):
    """Decorates a program's `main(argv)`: absl logging at WARNING unless --verbosity is
    given; before anything loads, no positional argument, each of `required`'s flags given
    ({name: "what to give"}: `check_start`) and `check()` (the program's own checks of its
    flags) passed; TensorFlow loaded quietly (with `tensorflow=False`, only where Keras
    runs on it: such a program runs on JAX or PyTorch without TensorFlow installed); and a
    user's mistake ends the program with its one sentence."""
    if function is None:
        return functools.partial(main, tensorflow=tensorflow, required=required, check=check)

    @functools.wraps(function)
    def wrapper(argv):
        if not FLAGS["verbosity"].present:
            logging.set_verbosity(logging.WARNING)
        interrupt.install()  # Ctrl-C stops the program even where a finalizer caught it
        try:
            check_start(argv, **(required or {}))
            if check is not None:
                check()
            _load_backend(tensorflow)
            return function(argv)
        except (KeyboardInterrupt, Interrupted) as error:
            _interrupted(error)
        except Exception as error:
            if interrupt.behind(error):  # an error raised over a Ctrl-C (TensorFlow's
                _interrupted(error)      # clean-up after one in its tracing)
            if isinstance(error, (UsageError, DataError, flags.ValidationError)):
                # The library names configuration fields; here they are flags.
                fail(project_flags.as_flags(str(error), getattr(error, "fields", ())))
            if isinstance(error, OSError):  # a full disk, a read-only folder, a file gone
                fail(system_fault(error))
            raise
    return wrapper


def _interrupted(error):
    """Ctrl-C: one line, no traceback, the shell's status for SIGINT."""
    said = str(error) if isinstance(error, Interrupted) else ""
    print(f"interrupted{': ' + said if said else '.'}", file=sys.stderr, flush=True)
    sys.exit(130)


def parse_flags(argv, doc=""):
    """absl's parsing, with a bad flag value reported as one sentence (`error: flag
    --batch_size=0: 0 is not a positive integer`) instead of absl's usage banner, and a
    short `--help` grouped by topic (`--helpfull` stays absl's, every flag in full), below
    the program's `doc`."""
    doc = doc.strip()
    if "--helpfull" in argv[1:]:  # absl's listing, which absl itself ends with status 1
        print(f"{doc}\n\n{FLAGS.get_help()}")
        sys.exit(0)
    if any(arg in ("--help", "-h", "-?", "--helpshort") for arg in argv[1:]):
        name = os.path.basename(argv[0]).removesuffix(".py")
        model = project_flags.chosen_model(argv[1:])
        print(f"{doc}\n\n{project_flags.short_help(FLAGS, program=name, model=model)}")
        sys.exit(0)
    try:
        return FLAGS(argv)
    except flags.UnrecognizedFlagError as error:
        hint = ""
        if (error.flagname in ("config", "preset") and "workdir" in FLAGS
                and "config" not in FLAGS):
            # evaluate, visualize, ensemble, predict: what a named configuration would set
            # comes from the trained run.
            hint = ("; this program takes the model and its configuration from --workdir "
                    "(a run or an export); --config names a configuration to train")
        elif error.flagname == "preset":
            # Its old name: a preset is now a trained model.
            hint = ("; it is now --config=NAME (dsan_tf.configs()), and a preset is a "
                    "trained model loaded by name (dsan_tf.presets())")
        fail(sentence(str(error).rstrip(".") + hint))
    except flags.Error as error:
        fail(sentence(str(error)))


def run(main_function, define_flags):
    """Defines the program's flags and runs it (the console scripts' entry point)."""
    define_flags()
    # --help lists the "key flags" of sys.argv[0]: make every flag the program defined one,
    # the shared ones too, whether it runs as `python -m` or as a console script.
    for flag in project_flags.project_flags(FLAGS):
        FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    # The program module's docstring: under `python -m experiments.NAME`, __main__ is the
    # clone's shim, not the program.
    doc = sys.modules[main_function.__module__].__doc__ or ""
    app.run(main_function, flags_parser=functools.partial(parse_flags, doc=doc))


def trained_model(workdir):
    """(model, its preprocessor, its family's name) that --workdir names: a run directory
    (its config.json says the family) or a trained preset, by name or folder (its
    metadata.json does). Keras loads here."""
    from dsan_tf.core import rundir
    from dsan_tf.models import preset

    if not rundir.is_run_directory(workdir):
        folder = preset.locate(workdir)
        metadata = os.path.join(folder, preset.METADATA)
        if os.path.isfile(metadata):
            model = preset.load(folder, compile=False)
            return model, model.preprocessor, rundir.read_json(metadata)["family"]
    model, preprocessor, config = rundir.RunDirectory(workdir).load()
    return model, preprocessor, config["model"]
