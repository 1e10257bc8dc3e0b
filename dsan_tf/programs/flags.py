"""The flags several programs share, defined by functions (after TF Model Garden's
`official/common/flags.py`); each program calls the ones it needs and defines its own.

Every flag of a configuration is derived from its field (`dsan_tf.core.config`, the families'
configurations, `RunPolicy`): the same name, default, type, limits, choices and help
(`hyperparameter`), so a hyperparameter is written once, in its configuration. The flags a
program was given become an `ExperimentConfig` here, once: a `--config`'s values, the given
flags on top. This module imports no TensorFlow: `--help` is fast.
"""

import dataclasses
import os
import re
import sys
import textwrap

from absl import flags

from dsan_tf.core.config import (
    DATA_PREFIXES, MODELS, STEP_CHOICES, DataConfig, ExperimentConfig, RunOutputs, RunPolicy,
    TrainingConfig, named_values)
from dsan_tf.models import registry
from dsan_tf.models.config import ModelConfig, described_fields, value_type

FLAGS = flags.FLAGS
# --help's groups: absl lists a program's flags by the module name they were defined under.
MODEL_GROUP = "model"


def is_project_module(module):
    """Whether absl's `module` name holds flags of this project: a program's (its script
    path, or a `dsan_tf.programs`, `experiments` or `benchmarks` module) or a model
    group's."""
    return (module.startswith(("dsan_tf.programs", "experiments", "benchmarks", MODEL_GROUP))
            or module.endswith(".py"))


def project_flags(values):
    """The flags this project defined (not absl's own), each once."""
    return list({flag.name: flag for module, module_flags in values.flags_by_module_dict().items()
                 if is_project_module(module) for flag in module_flags}.values())


def _once(topic):
    """Decorates a define function: a program and a test may both call it (the second call
    is a no-op), and the flags it defines are filed under `topic` for `--help`, unless it
    filed them itself."""
    def decorate(define):
        def wrapper():
            if define.__name__ not in _DEFINED:
                _DEFINED.add(define.__name__)
                before = set(FLAGS)
                define()
                for name in set(FLAGS) - before:
                    TOPIC_OF.setdefault(name, topic)
        wrapper.__name__, wrapper.__doc__ = define.__name__, define.__doc__
        return wrapper
    return decorate


_DEFINED = set()
# --help's topic of each flag the shared define functions made (a program's own flags are
# shown under the program); the model flags are filed per family.
TOPIC_OF = {}
TOPICS = ("model", "data", "training", "output")
# `RunPolicy`'s fields that say how the steps run (`define_step_flags`).
STEP_FLAGS = (*STEP_CHOICES, "compile_ahead", "compilation_cache")


def require_existing(name, directory=False, prefixes=(), values=()):
    """Checks, when flags are parsed (before TensorFlow loads), that each value of --name
    is an existing file (or directory), unless it starts with one of `prefixes` or is one
    of `values`; a missing one stops the program with one sentence naming flag and path."""
    exists = os.path.isdir if directory else os.path.isfile
    what = "directory" if directory else "file"

    def check(value):
        for item in value if isinstance(value, list) else [value]:
            if item is None or item in values or item.startswith(tuple(prefixes)):
                continue
            if not exists(item):
                found = "directory" if os.path.isdir(item) else "file"
                there = (f"a {found}, not a {what}" if os.path.exists(item)
                         else f"no such {what}")
                # absl names a list flag by its Python list; `program.sentence` puts the
                # missing value in its place.
                raise flags.ValidationError(f"{item}: {there}" if isinstance(value, list)
                                            else there)
        return True
    flags.register_validator(name, check)


def _writable_folder(path):
    """Why files cannot be made at `path` (a folder to be, or one that exists), or None:
    a file in its place or among its parents, or its nearest existing folder read-only."""
    path = probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    named = "" if probe == path else f"{probe} is "
    if not os.path.isdir(probe):
        return f"{named}a file, not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{named}a directory that cannot be written (permission denied or read-only)"
    return None


def require_output_directory(name):
    """Checks, when flags are parsed, that --name is a folder a program may write in:
    none there yet (it is made) or a folder, in a place that can be written."""
    def check(value):
        if value is None:
            return True
        fault = _writable_folder(value)
        if fault:
            raise flags.ValidationError(fault)
        return True
    flags.register_validator(name, check)


def require_output_file(name):
    """Checks, when flags are parsed, that --name is a file a program may write: not a
    folder, in a folder that exists and can be written, and not one of a run directory's
    records (another program's output would replace the run's own)."""
    from dsan_tf.core import rundir

    def check(value):
        if value is None or value == "-":
            return True
        folder = os.path.dirname(os.path.abspath(value))
        if os.path.isdir(value):
            raise flags.ValidationError("a directory, not a file")
        if not os.path.isdir(folder):
            raise flags.ValidationError(f"no such directory {folder}"
                                        if not os.path.exists(folder) else
                                        f"{folder} is a file, not a directory")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise flags.ValidationError(f"the directory {folder} cannot be written")
        inside = rundir.enclosing_run(value)
        if inside:
            raise flags.ValidationError(_inside_run(value, inside))
        return True
    flags.register_validator(name, check)


def _inside_run(value, run):
    """The refusal of an output `value` inside the run directory `run`."""
    from dsan_tf.core import rundir

    name = os.path.relpath(os.path.abspath(value), os.path.abspath(run))
    if name in rundir.RECORDS:
        return f"that is the {name} of the run {run}, which only train writes; write elsewhere"
    return (f"that is inside the run directory {run}, whose files only train writes; "
            "write elsewhere")


def refuse_inside_runs(name):
    """Checks, when flags are parsed, that the folder --name is not inside a run directory
    (at any depth): a program's outputs never land among a run's records."""
    from dsan_tf.core import rundir

    def check(value):
        inside = value and rundir.enclosing_run(value)
        if inside:
            raise flags.ValidationError(_inside_run(value, inside))
        return True
    flags.register_validator(name, check)


def refuse_onto_inputs(name, *inputs):
    """Checks, when flags are parsed, that the file --name is none of the files the flags
    `inputs` name (a data spec that is a path, an input file): an output never replaces
    what the same command reads."""
    def check(values):
        target = values[name]
        if not target or target == "-":
            return True
        for flag in inputs:
            given = values.get(flag)
            for item in given if isinstance(given, list) else [given]:
                item = item and (item if os.path.exists(item) else item.split(":", 1)[-1])
                if item and os.path.exists(item) and os.path.exists(target) and \
                        os.path.samefile(item, target):
                    raise flags.ValidationError(f"--{name}={target} is the file --{flag} "
                                                "reads; write the output elsewhere")
        return True
    flags.register_multi_flags_validator([name, *inputs], check)


def refuse_other_runs(name, workdir="workdir"):
    """Checks, when flags are parsed, that --name (a folder written to) is not inside a
    run directory other than the --workdir(s) given: an export inside another run would
    be loaded as that run's model."""
    from dsan_tf.core import rundir

    def check(values):
        target, own = values[name], values.get(workdir)
        if target is None:
            return True
        own = [os.path.realpath(path) for path in (own if isinstance(own, list) else [own])
               if path]
        inside = rundir.enclosing_run(target)
        if inside and os.path.realpath(inside) not in own:
            raise flags.ValidationError(f"--{name} is inside the run directory {inside}, "
                                        f"which is not --{workdir}; write it elsewhere")
        if inside:  # its own run: a folder of its own there (export/), none of train's
            relative = os.path.relpath(os.path.abspath(target), os.path.abspath(inside))
            if relative == "." or relative.split(os.sep)[0] in rundir.RUN_FILES:
                raise flags.ValidationError(
                    f"--{name}={target} is among the files train writes in {inside}; give "
                    f"a folder of its own (e.g. {os.path.join(inside, 'export')}) or one "
                    "outside the run")
        return True
    flags.register_multi_flags_validator([name, workdir], check)


def check_config_paths(*parts, values=FLAGS):
    """A --config's file paths in `parts` (configurations: its data, word vectors, shape
    costs) checked before TensorFlow loads, as a flag's are (`require_existing`): a
    missing one is one sentence naming the config, the field and where the path was
    looked for (it failed after TensorFlow loaded, without saying what it is relative
    to)."""
    name = values["config"].value if "config" in values else None
    if not name:
        return
    for part in parts:
        for field in described_fields(type(part)):
            limits, value = field.metadata, getattr(part, field.name)
            if ("exists" not in limits or not isinstance(value, str) or field.name in values
                    and values[field.name].present or value in limits.get("values", ())
                    or value.startswith(tuple(limits.get("prefixes", ())))):
                continue
            exists = os.path.isdir if limits["exists"] == "directory" else os.path.isfile
            if not exists(value):
                raise flags.ValidationError(
                    f"--config={name} gives {field.name}={value}, which is no "
                    f"{limits['exists']} from {os.getcwd()}: a configuration's paths are "
                    "relative to "
                    "the directory a program runs in (its ../shared/data paths to a clone's "
                    f"root); run from there, or give --{field.name}.")


def model_hyperparameters():
    """{flag name: (`dataclasses.Field`, {family: its default}, {family: its help})} over
    `ModelConfig` and every family's configuration: one flag per field name, whichever
    families share it."""
    found = {}
    for name in MODELS:
        config_class = registry.family(name).config
        for field in config_class.hyperparameters():
            entry = found.setdefault(field.name, (field, {}, {}))
            entry[1][name] = field.default
            entry[2][name] = field.metadata["help"]
            choices = entry[0].metadata.get("choices")
            if choices and set(field.metadata["choices"]) - set(choices):
                # Families offer different choices under one name (DSAN's and AF-DMN's
                # --initialization): the flag takes any of them, the chosen family's
                # configuration refuses the others.
                union = tuple(dict.fromkeys((*choices, *field.metadata["choices"])))
                merged = dataclasses.field(default=entry[0].default,
                                           metadata={**entry[0].metadata, "choices": union})
                merged.name, merged.type = field.name, entry[0].type
                found[field.name] = (merged, entry[1], entry[2])
    return found


def _group(flag_name, defaults):
    """The --help group of a model flag: "model" where every family has it, else the
    families that do ("model: afdmn")."""
    shared = {field.name for field in ModelConfig.hyperparameters()}
    if flag_name in shared or len(defaults) == len(MODELS):
        return MODEL_GROUP
    return f"{MODEL_GROUP}: {', '.join(defaults)}"


def define_field(field, default=None, module_name=None, help_text=None):
    """One flag for a configuration field: its name, type, bounds or choices, its help,
    and its default (`default`, when given, else the field's); a field declared with
    `exists` is checked to name an existing file or directory when flags are parsed."""
    default = field.default if default is None else default
    help_text = help_text or field.metadata["help"]
    common = {"module_name": module_name} if module_name else {}
    limits = field.metadata
    bounds = {key: limits[key] for key in ("lower_bound", "upper_bound") if key in limits}
    kind = value_type(field)
    if "choices" in limits:
        flags.DEFINE_enum(field.name, default, limits["choices"], help_text, **common)
    elif kind is bool:
        flags.DEFINE_boolean(field.name, default, help_text, **common)
    elif kind is int:
        flags.DEFINE_integer(field.name, default, help_text, **bounds, **common)
    elif kind is float:
        flags.DEFINE_float(field.name, default, help_text, **bounds, **common)
    else:
        flags.DEFINE_string(field.name, default, help_text, **common)
    if "exists" in limits:
        require_existing(field.name, directory=limits["exists"] == "directory",
                         prefixes=limits.get("prefixes", ()), values=limits.get("values", ()))


def define_config_flags(config_class, topic, names=None):
    """A flag for each field of `config_class` (those of `names` only, when given) not
    defined yet, filed under the field's `topic` or `topic` for `--help`."""
    for field in described_fields(config_class):
        if (names is None or field.name in names) and field.name not in FLAGS:
            define_field(field)
            TOPIC_OF.setdefault(field.name, field.metadata.get("topic", topic))


def _define_hyperparameter(field, defaults, helps):
    """A model flag: the first family's default, a note where families' differ, and each
    family's help where they describe the field differently."""
    help_text = field.metadata["help"]
    if len(set(helps.values())) > 1:
        help_text = " ".join(f"{family}: {text}" for family, text in helps.items())
    if len({repr(value) for value in defaults.values()}) > 1:
        help_text += " Default per model: " + ", ".join(
            f"{family} {'unset' if value is None else value}"
            for family, value in defaults.items()) + "."
    define_field(field, next(iter(defaults.values())), _group(field.name, defaults),
                 help_text)


@_once("model")
def define_model_flags():
    """--config, --model and one flag per hyperparameter of the families' configurations,
    same name; a flag left unset takes the named configuration's value, else the chosen family's
    default (its paper's value)."""
    define_named_config_flag()
    flags.DEFINE_enum("model", registry.DEFAULT, MODELS, "The model family; the model flags left "
                      "unset take its paper's values (docs/FIDELITY.md: each paper).",
                      module_name=MODEL_GROUP)
    for field, defaults, helps in model_hyperparameters().values():
        _define_hyperparameter(field, defaults, helps)
        TOPIC_OF[field.name] = _group(field.name, defaults)


@_once("data")
def define_reading_flags():
    """What every program that reads data for a trained model needs: TFDS's directory and
    the batch size. No --config: the model and its configuration come from the run or
    export (a named configuration given here is refused, not ignored)."""
    define_config_flags(DataConfig, "data", ("tfds_data_dir", "batch_size"))


@_once("data")
def define_evaluation_flags():
    """What the programs that score trained models on data sources share: --data (the
    sources) and --save_predictions."""
    flags.DEFINE_multi_string("data", None, "Data source spec(s) to evaluate on.")
    require_existing("data", prefixes=DATA_PREFIXES)
    flags.DEFINE_boolean("save_predictions", False, "Also write the predicted and gold "
                         "label ids (an ensemble's and each member's), in file order, as "
                         "strings of digits (`predictions`, `labels`), for paired "
                         "significance tests between runs.")
    TOPIC_OF["save_predictions"] = "output"


@_once("data")
def define_data_flags():
    """Data sources, text processing, batching and word vectors: `DataConfig`'s fields."""
    define_config_flags(DataConfig, "data")


@_once("training")
def define_training_flags():
    """Optimisation and precision: `TrainingConfig`'s fields."""
    define_config_flags(TrainingConfig, "training")


@_once("output")
def define_workdir_flag():
    flags.DEFINE_string("workdir", None, "Run directory of dsan-train: configuration, "
                        "vocabulary, checkpoints, TensorBoard logs, best model.")
    require_output_directory("workdir")


@_once("training")
def define_step_flags():
    """How the steps run (`RunPolicy`'s fields but where and what a run writes): what the
    programs that train or time steps without a run directory take."""
    define_config_flags(RunPolicy, "training", STEP_FLAGS)


@_once("training")
def define_run_flags():
    """How a training run is carried out: `RunPolicy`'s fields (how its steps run),
    `RunOutputs`' (what it logs, probes and exports) and --stop_after_epochs."""
    define_config_flags(RunPolicy, "training")
    define_config_flags(RunOutputs, "output")
    flags.DEFINE_integer(
        "stop_after_epochs", 0, "Train at most this many epochs in this call, then stop as "
        "an interrupted run stops: its epochs kept, the same command resumes it (a job's "
        "time limit; timing the first epochs of a schedule whose batch shapes and learning "
        "rates are chosen for all of it). 0: train to the end.", lower_bound=0)


def define_experiment_flags():
    """The flags of a training run (what `dsan-train` and `dsan-tune` train): --config,
    the model, data, training and run flags and --workdir."""
    define_named_config_flag()
    define_model_flags()
    define_data_flags()
    define_training_flags()
    define_workdir_flag()
    define_run_flags()


@_once("model")
def define_named_config_flag():
    """--config: a named training configuration (`dsan_tf.configs()`) under the flags
    given (--preset, its old name, is refused with a sentence: `program.parse_flags`)."""
    flags.DEFINE_enum("config", None, list(registry.configs()), "A named training "
                      "configuration (the papers', the study's configuration, the demo; "
                      "docs/TRAINING.md lists them): its values are the defaults, the flags "
                      "given go on top.", module_name=MODEL_GROUP)


@_once("output")
def define_finished_workdir_flag():
    """--workdir of the programs that read a finished run, an export or a trained preset:
    a directory that exists, or a preset's name."""
    presets = tuple(registry.trained_presets())
    flags.DEFINE_string("workdir", None, "A finished dsan-train run directory, an export of "
                        f"dsan-export, or a trained preset's name ({', '.join(presets)}).")
    require_existing("workdir", directory=True, values=presets)


@_once("output")
def define_run_workdir_flag():
    """--workdir of the programs that read a run directory's own record beside its model
    (dsan-export, dsan-visualize): an export or a trained preset holds none."""
    flags.DEFINE_string("workdir", None, "A dsan-train run directory (its config.json and "
                        "best model); an export or a trained preset holds no run record.")
    require_existing("workdir", directory=True)


@_once("output")
def define_output_flag():
    flags.DEFINE_string("output", None, "Write the results to this JSON file.")
    require_output_file("output")


def as_flags(message, fields=()):
    """A library message in flag syntax: each configuration field it names becomes the
    flag of the same name (`num_heads must divide` -> `--num_heads must divide`). The
    names replaced are `fields` and the project's flag names that hold an underscore or
    begin the message (a plain word such as "model" elsewhere stays a word)."""
    names = {flag.name for flag in project_flags(FLAGS)}
    chosen = set(fields) | {name for name in names if "_" in name}
    first = re.match(r"\w+", message)
    if first and first.group(0) in names:
        chosen.add(first.group(0))
    for name in sorted(chosen, key=len, reverse=True):
        message = re.sub(rf"(?<![\w\-./=]){re.escape(name)}(?![\w/])", f"--{name}", message)
    return message


def given_values(values=FLAGS, names=None, base=None):
    """{field name: value} of `--config`'s values (or of `base`, {field: value}: an
    encoded setting's) with the configuration flags given on top (a flag left unset takes
    the named configuration's value, else its field's default), for the fields `names`
    (default: `ExperimentConfig`'s)."""
    names = ExperimentConfig.field_names() if names is None else names
    name = values["config"].value if "config" in values else None
    named = base if base is not None else named_values(name) if name else {}
    given = {field: values[field].value for field in names
             if field in values and values[field].present}
    return {**{n: v for n, v in named.items() if n in names}, **given}


def experiment_config(values=FLAGS, base=None):
    """The `ExperimentConfig` of the flags a program defined and was given (`--config`
    under them, or `base`, an `ExperimentConfig`; others keep their defaults). The model
    flags of other families (a shared flagfile's) are left out, and said so on stderr; a
    bad value or combination raises `flags.ValidationError` with the library's sentence in
    flag syntax."""
    chosen = given_values(values, base=base.flat() if base is not None else None)
    try:
        config = ExperimentConfig.from_flat(chosen, lenient=set(chosen))
    except ValueError as error:
        raise flags.ValidationError(as_flags(str(error))) from None
    unused = sorted(set(given_values(values)) - set(config.flat()))
    if unused:
        print(f"not used by --model={config.model}: "
              f"{', '.join('--' + name for name in unused)}", file=sys.stderr)
    return config


def model_config(values=FLAGS, **overrides):
    """The configuration of the --model family that the model flags (and `--config`)
    describe, with `overrides` (field names) on top."""
    return dataclasses.replace(experiment_config(values).model_config, **overrides)


def reading_config(values=FLAGS, model=registry.DEFAULT):
    """The `ExperimentConfig` of a program that reads data for a trained `model`: its
    --tfds_data_dir and --batch_size (`define_reading_flags`), defaults otherwise."""
    chosen = given_values(values)
    return ExperimentConfig(model=model, data=DataConfig(**{
        name: chosen[name] for name in ("tfds_data_dir", "batch_size") if name in chosen}))


def run_policy(values=FLAGS, base=None):
    """The `RunPolicy` of the flags a program defined (`define_run_flags`,
    `define_step_flags`; `--config`'s values under them, or `base`'s, a `RunPolicy`),
    unresolved: the run decides the unset choices (`RunPolicy.resolved`)."""
    return _run_part(RunPolicy, values, base)


def run_outputs(values=FLAGS):
    """The `RunOutputs` of the flags a program defined (`define_run_flags`)."""
    return _run_part(RunOutputs, values)


def _run_part(part, values, base=None):
    """`part` (`RunPolicy`, `RunOutputs`) of its fields' flags; a value it refuses is
    absl's `ValidationError`, naming the flag."""
    names = [field.name for field in dataclasses.fields(part)]
    try:  # a flag left unset is its field's default
        return part(**given_values(values, names,
                                   base.to_dict() if base is not None else None))
    except ValueError as error:
        raise flags.ValidationError(as_flags(str(error))) from None


def family_defaults(values=FLAGS):
    """{flag: the --model family's default} for the model flags left unset whose flag
    default is another family's (flags.txt records what they stood for)."""
    if "model" not in values:
        return {}
    config_class = registry.family(values["model"].value).config
    return {field.name: field.default for field in config_class.hyperparameters()
            if field.name in values and not values[field.name].present
            and values[field.name].value != field.default}


def flagfile_flags(path):
    """The flags of the flagfile at `path`, one per line as written (comments and blank
    lines aside)."""
    with open(path, encoding="utf-8") as flagfile:
        return [line.strip() for line in flagfile
                if line.strip() and not line.strip().startswith("#")]


def flagfile_lines(values=FLAGS, exclude=(), **resolved):
    """The program's own flags (not absl's, not those in `exclude`), with `resolved` values
    replacing the given ones, as --flagfile lines that repeat the run."""
    resolved = dict(family_defaults(values), **resolved)
    lines = []
    for flag in sorted(project_flags(values), key=lambda f: f.name):
        value = resolved.get(flag.name, flag.value)
        if value is None or flag.name in exclude:
            continue
        if isinstance(value, bool):
            lines.append(f"--{'' if value else 'no'}{flag.name}")
        elif flag.name in resolved:
            lines.append(f"--{flag.name}={value}")
        else:
            lines.append(flag.serialize())
    return lines


def chosen_model(argv):
    """The family a command line trains, for its `--help`: its `--model`, else its
    `--config`'s family, else the default (a name no family has: the default)."""
    found = {}
    for index, arg in enumerate(argv):
        for name in ("model", "config"):
            if arg.startswith(f"--{name}="):
                found[name] = arg.split("=", 1)[1]
            elif arg == f"--{name}" and index + 1 < len(argv):
                found[name] = argv[index + 1]
    if found.get("model") in MODELS:
        return found["model"]
    configs = registry.configs()
    return configs[found["config"]][0] if found.get("config") in configs else registry.DEFAULT


def _help_line(flag, default, help_text=None):
    """A flag on a line or two: its help's (`help_text`'s) first sentence, after its
    default."""
    # The first sentence: a full stop before a capital, not "et al." or "e.g.".
    text = " ".join((help_text or flag.help).split()).replace(
        ".; repeat this option to specify a list of values", " (repeatable)")
    first = re.split(r"(?<!al)(?<!e\.g)\.\s+(?=[A-Z])", text)[0].rstrip(".") + "."
    shown = "" if default is None else f" ({default})"
    return textwrap.wrap(f"--{flag.name}{shown}: {first}", 96, initial_indent="  ",
                         subsequent_indent="      ")


def _default_text(flag, hyperparameters, model):
    """A flag's default as `--help` shows it: a model flag's is `model`'s."""
    if flag.name in hyperparameters:
        value = hyperparameters[flag.name][1][model]
        return None if value is None else str(value).lower() if isinstance(value, bool) \
            else str(value)
    return None if flag.default is None else flag.default_as_str.strip("'")


def short_help(values=FLAGS, program="this program", model=registry.DEFAULT):
    """`--help`: each flag on a line or two (its help's first sentence), grouped by topic:
    the model flags every family has, those of `model` (the family the command line
    trains) with its defaults, data, training, output, the program's own. Other families'
    own flags are left to `--helpfull` (or `--model=NAME --help`)."""
    hyperparameters = model_hyperparameters()
    own, groups, hidden = f"{MODEL_GROUP}: {model}'s own", {}, 0
    for flag in sorted(project_flags(values), key=lambda f: (f.name != "model", f.name)):
        topic = TOPIC_OF.get(flag.name, program)
        if topic.startswith(MODEL_GROUP + ":"):
            if model not in hyperparameters[flag.name][1]:
                hidden += 1
                continue
            topic = own
        groups.setdefault(topic, []).append(flag)
    lines = ["Flags by topic (--helpfull: every flag with its default and type; "
             "--flagfile=FILE reads flags from a file, one per line, as a named "
             "configuration's, --config=NAME):"]
    for topic in [t for t in (MODEL_GROUP, own, *TOPICS[1:], program) if t in groups]:
        lines.append(f"\n{topic}:")
        for flag in groups[topic]:
            # A model flag: the family's own help (absl's holds every family's).
            family_help = (hyperparameters[flag.name][2].get(model)
                           if flag.name in hyperparameters else None)
            lines += _help_line(flag, _default_text(flag, hyperparameters, model), family_help)
    if hidden:
        others = ", ".join(name for name in MODELS if name != model)
        lines += [""] + textwrap.wrap(
            f"{hidden} more model flags belong to other families ({others}): --model=NAME "
            "--help shows a family's, --helpfull every flag.", 96)
    return "\n".join(lines)


def lengths(name, values=FLAGS):
    """The sorted positive integers of a comma-separated list flag (ValueError otherwise)."""
    try:
        result = sorted({int(value) for value in values[name].value})
    except ValueError:
        result = []
    if not result or result[0] < 1:
        raise ValueError(f"--{name} must be positive integers separated by commas, got "
                         f"{','.join(values[name].value)!r}.")
    return result
