"""Trained models as presets, in keras-hub's layout (`keras_hub/src/utils/preset_utils.py`),
and the one loader of every place a trained model lives.

    PRESET/metadata.json          versions, class, parameter count, labels, date
    PRESET/config.json            the backbone (`keras.saving.serialize_keras_object`)
    PRESET/model.weights.h5       the backbone's weights
    PRESET/task.json              the classifier: head and preprocessor settings
    PRESET/task.weights.h5        the classifier's weights outside the backbone (its head)
    PRESET/preprocessor.json      the preprocessor's settings
    PRESET/assets/preprocessor/   its vocabulary (vocab.json)
    PRESET/members/<i>/           an ensemble's members, each a preset as above
    PRESET/MODEL_CARD.md          (a shipped preset) how it was trained and how well it does

`load` also reads a run directory of `dsan-train` (best.keras) and an export
(EXPORT_DIR or one of its versions: model.keras; an ensemble's members/<i>/), and a
trained preset that ships inside the package by its name: a family's
`dsan_tf/models/<family>/trained/<name>/` (`names()` lists them).
"""

import datetime
import inspect
import json
import os
import zipfile

from dsan_tf.common.frameworks import keras

from dsan_tf.common.errors import UsageError
from dsan_tf.models import registry
from dsan_tf.common import keras_private
from dsan_tf.version import __version__

METADATA, BACKBONE_CONFIG, BACKBONE_WEIGHTS = "metadata.json", "config.json", "model.weights.h5"
TASK_CONFIG, TASK_WEIGHTS = "task.json", "task.weights.h5"
PREPROCESSOR_CONFIG, PREPROCESSOR_ASSETS = "preprocessor.json", os.path.join("assets",
                                                                             "preprocessor")
MEMBERS = "members"
# A run directory's model and an export's (`dsan_tf.core.rundir`: BEST, MODEL).
MODEL_FILES = ("best.keras", "model.keras")


ENSEMBLE = "NLIEnsemble"  # the class a preset of several members records


def _task_class(name):
    """The task model's class that a preset records (`NLIClassifier`, `NLIEnsemble`), as
    Keras registered it: the files say what they hold, as `.keras` files do, so this module
    needs neither class (both load through it: `TextModel.from_preset`)."""
    found = keras.saving.get_registered_object(f"dsan_tf>{name}")
    if found is None:
        raise ValueError(f"a preset records the class {name!r}, which dsan_tf does not "
                         "define.")
    return found


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as stream:
        json.dump(value, stream, indent=2)
        stream.write("\n")


def _read_json(path):
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def save(model, preset_dir, description=""):
    """Writes `model` (an `NLIClassifier` with a preprocessor, or an `NLIEnsemble` of
    them) into `preset_dir` (made if missing; its files are replaced), with `description`
    (what it is, one line: `dsan_tf.presets()` lists it) in its metadata."""
    os.makedirs(preset_dir, exist_ok=True)
    metadata = {"class": type(model).__name__, "description": description,
                "keras_version": keras.__version__,
                "dsan_tf_version": __version__, "labels": model.label_names,
                "parameter_count": int(model.count_params()),
                "date_saved": datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%d@%H:%M:%S")}
    if getattr(model, "members", None) is not None:  # an NLIEnsemble
        metadata["members"] = len(model.members)
        for number, member in enumerate(model.members, 1):
            save(member, os.path.join(preset_dir, MEMBERS, str(number)))
        _write_json(os.path.join(preset_dir, METADATA), metadata)
        return
    if model.preprocessor is None:
        raise ValueError("a preset holds the model with its preprocessor: set "
                         "model.preprocessor (dsan_tf.data.NLIPreprocessor) first.")
    metadata["family"] = model.name
    _write_json(os.path.join(preset_dir, BACKBONE_CONFIG),
                keras.saving.serialize_keras_object(model.backbone))
    model.backbone.save_weights(os.path.join(preset_dir, BACKBONE_WEIGHTS))
    task = keras.saving.serialize_keras_object(model)
    # How it was compiled (its run's optimizer and learning rate), which `load` compiles
    # it with again.
    task["compile_config"] = model.get_compile_config()
    _write_json(os.path.join(preset_dir, TASK_CONFIG), task)
    keras.saving.save_weights(model, os.path.join(preset_dir, TASK_WEIGHTS),
                              objects_to_skip=_backbone_objects(model))
    _write_json(os.path.join(preset_dir, PREPROCESSOR_CONFIG),
                keras.saving.serialize_keras_object(model.preprocessor))
    assets = os.path.join(preset_dir, PREPROCESSOR_ASSETS)
    os.makedirs(assets, exist_ok=True)
    model.preprocessor.save_assets(assets)
    _write_json(os.path.join(preset_dir, METADATA), metadata)


def _backbone_objects(model):
    # The backbone's layers (and the preprocessor, which has no weights) are not the task's;
    # nor is the optimizer's training state (a preset is for inference and fine-tuning
    # afresh; its compile config keeps the optimizer's settings).
    return [*keras_private.flatten_layers(model.backbone), model.preprocessor,
            *([model.optimizer] if getattr(model, "optimizer", None) is not None else [])]


class NoModel(UsageError, ValueError):
    """A directory holds no model `load` reads."""


class NoModelFiles(NoModel):
    """A directory holds none of the files of a model `load` reads (as opposed to one of
    them damaged)."""


def _one_line(error):
    """What an error from loading a file said, on one line ("TypeError: ..."), shortened."""
    return f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"


def versions(path):
    """The versions of `path` (an EXPORT_DIR): its integer-named folders, newest first."""
    return sorted((int(name) for name in os.listdir(path)
                   if name.isdigit() and os.path.isdir(os.path.join(path, name))),
                  reverse=True)


def newest_version(path):
    """The largest integer-named folder of `path` (an EXPORT_DIR), else `path`."""
    found = versions(path)
    return os.path.join(path, str(found[0])) if found else path


def names():
    """{name: directory} of the trained presets this package ships (a family's
    `dsan_tf/models/<family>/trained/<name>/`: `registry.trained_presets`)."""
    return {name: folder for name, (folder, _) in registry.trained_presets().items()}


def locate(path):
    """The directory (or `.keras` file) that holds the model `path` names: `path` itself,
    or the trained preset of that name. `NoModel` (one sentence naming `path`) otherwise."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(".keras") and os.path.isfile(path):
        return path
    shipped = names()
    if path in shipped:
        return shipped[path]
    hint = (f" ({path} is a training configuration: dsan-train "
            f"--config={path} trains it)" if path in registry.configs() else "")
    raise NoModel(f"{path} is neither a directory nor a trained preset ({', '.join(shipped)})"
                  f"{hint}: give a preset, a run directory or an export.")


def load(path, compile=True, dtype=None, load_weights=True, **arguments):
    """The model of a preset (a directory, or the name of a trained preset this package
    ships), a run directory, an export, an ensemble or a `.keras` file, with its
    preprocessor (`TextModel.from_preset`). `NoModel`, a ValueError of one sentence naming
    `path`, when it holds none.

    Args:
        compile: compiled as it was trained (the paper's setup where its files do not
            say, or its head starts anew), or not at all (False).
        dtype: its layers' (and the task's) dtype policy, e.g. "mixed_float16"; None:
            Keras' global policy where one was set, as keras-hub casts a saved float dtype
            to it, else the policy it was saved with.
        load_weights: False: the same architecture with fresh weights.
        **arguments: the task model's constructor arguments that differ from the saved
            ones, as keras-hub's `from_preset` takes them: `num_classes` (a new,
            untrained head on the trained backbone), `preprocessor` (None: ids only),
            `dropout`, `hidden_units`, ...; and `label_names`, the classes' names (the
            preprocessor's; a head of another size without them names its classes
            class_0, class_1, ...). The trained head is kept where its weights fit.
    """
    # Its files name the classes Keras looks up: every one registered first (a fresh process
    # may have imported no task model yet, whose module would register them).
    registry.register_keras_classes()
    path = locate(path)
    if os.path.isdir(path) and not any(os.path.exists(os.path.join(path, name))
                                       for name in (METADATA, *MODEL_FILES)):
        # An export's folder: its newest version. A run directory's or a preset's own model
        # comes first, whatever folders someone put beside it.
        path = newest_version(path)
    if os.path.exists(os.path.join(path, METADATA)):
        try:
            model, compile_config = _load_preset(path)
        except NoModel:
            raise
        except Exception as error:  # noqa: BLE001 - a hostile or damaged preset's files
            raise NoModel(f"{path} is not a preset this project can read "
                          f"({_one_line(error)}).") from None
    elif os.path.isfile(path) or any(os.path.exists(os.path.join(path, name))
                                     for name in MODEL_FILES):
        model, compile_config = _load_model_file(path)
    elif os.path.isdir(os.path.join(path, MEMBERS)):
        model, compile_config = _ensemble(path), None
    else:
        raise NoModelFiles(f"{path} holds no model: neither a preset ({METADATA}), a run "
                         f"directory ({MODEL_FILES[0]}), an export ({MODEL_FILES[1]}) nor "
                         f"an ensemble's {MEMBERS}/.")
    model, head_kept = _as_asked(model, arguments, dtype, load_weights)
    if compile:
        _compile(model, compile_config if head_kept else None)
    return model


def _as_asked(model, arguments, dtype, load_weights):
    """(`model`, or the same model made anew: with the dtype policy asked (or the global
    one), the constructor `arguments` given, fresh weights; whether its trained head was
    kept). Weights are copied, so the numbers are the trained ones (at the new policy's
    precision)."""
    policy = keras.dtype_policies.get(dtype) if dtype else keras.config.dtype_policy()
    if not dtype and policy.name == "float32":
        policy = None  # none asked nor set: as saved
    if getattr(model, "members", None) is not None:  # an ensemble: its members are
        if arguments:
            raise ValueError(f"{', '.join(sorted(arguments))}: an ensemble averages its "
                             "members' trained models; give one member's run or preset to "
                             "change its head or preprocessor.")
        if policy is None and load_weights:
            return model, True
        return type(model)([_as_asked(member, {}, dtype, load_weights)[0]
                            for member in model.members], name=model.name,
                           compile=False), True
    policy = policy or model.backbone.dtype_policy
    if policy.name == model.backbone.dtype_policy.name and not arguments and load_weights:
        return model, True
    config = _task_arguments(model, dict(arguments))
    backbone_config = dict(config.pop("backbone"))
    backbone_config["config"] = {**backbone_config["config"],
                                 "dtype": keras.dtype_policies.serialize(policy)}
    made = type(model)(keras.layers.deserialize(backbone_config), compile=False, **config)
    if load_weights:
        made.backbone.set_weights(model.backbone.get_weights())
    head_kept = load_weights and [w.shape for w in made.head.weights] == [
        w.shape for w in model.head.weights]
    if head_kept:
        made.head.set_weights(model.head.get_weights())
    return made, head_kept


def _task_arguments(model, arguments):
    """The constructor arguments of a `model` made anew with `arguments` (`load`'s), its
    preprocessor named for its classes; ValueError naming an argument it does not take."""
    task = type(model)
    taken = sorted(set(inspect.signature(task.__init__).parameters)
                   - {"self", "backbone", "compile", "kwargs"})
    unknown = sorted(set(arguments) - set(taken) - {"label_names"})
    if unknown:
        raise ValueError(f"{task.__name__}.from_preset takes no {', '.join(unknown)}: its "
                         f"model's arguments are {', '.join(taken)} (and label_names, dtype, "
                         "compile, load_weights).")
    config = model.get_config()
    config.update(preprocessor=model.preprocessor)
    names = arguments.pop("label_names", None)
    config.update(arguments)
    preprocessor = config["preprocessor"]
    if names is None and preprocessor is not None and \
            len(preprocessor.label_names) != config["num_classes"]:
        names = [f"class_{index}" for index in range(config["num_classes"])]
    if names is not None:
        if preprocessor is None:
            raise ValueError("label_names are a preprocessor's: give one beside them (the "
                             "model has none, or preprocessor=None was given).")
        relabelled = type(preprocessor).from_config(
            {**preprocessor.get_config(), "label_names": list(names)})
        relabelled.set_vocabulary(preprocessor.vocabulary)
        config["preprocessor"] = relabelled
    return config


def _compile(model, compile_config):
    """Compiles `model` with the compile config its files recorded, else the paper's."""
    if not compile_config:
        model.compile()
        return
    model.compile_from_config(compile_config)  # the loading backend's jit_compile


def _ensemble(path):
    """The `NLIEnsemble` of the members in `path`'s members/<i>/, in their order."""
    folder = os.path.join(path, MEMBERS)
    numbers = sorted(int(name) for name in os.listdir(folder) if name.isdigit())
    return _task_class(ENSEMBLE)([load(os.path.join(folder, str(number)), compile=False)
                                  for number in numbers], compile=False)


def _load_preset(path):
    """(model, the compile config its task.json recorded or None) of a preset."""
    metadata = _read_json(os.path.join(path, METADATA))
    if metadata.get("class") == ENSEMBLE:
        return _ensemble(path), None
    backbone = keras.saving.deserialize_keras_object(
        _read_json(os.path.join(path, BACKBONE_CONFIG)))
    backbone.ensure_built()
    backbone.load_weights(os.path.join(path, BACKBONE_WEIGHTS))
    preprocessor = keras.saving.deserialize_keras_object(
        _read_json(os.path.join(path, PREPROCESSOR_CONFIG)))
    preprocessor.load_assets(os.path.join(path, PREPROCESSOR_ASSETS))
    task = _read_json(os.path.join(path, TASK_CONFIG))
    arguments = {key: value for key, value in task["config"].items()
                 if key not in ("backbone", "preprocessor")}
    model = _task_class(task["class_name"])(backbone, preprocessor=preprocessor,
                                            **{**arguments, "compile": False})
    keras.saving.load_weights(model, os.path.join(path, TASK_WEIGHTS),
                              objects_to_skip=_backbone_objects(model))
    return model, task.get("compile_config")


def _load_model_file(path):
    """(model, its compile config or None) of a `.keras` file, or of a run directory's
    best.keras or an export's model.keras, with the preprocessor beside it when the file
    has none (files written before the classifier held it)."""
    file = path if os.path.isfile(path) else next(
        os.path.join(path, name) for name in MODEL_FILES
        if os.path.exists(os.path.join(path, name)))
    path = os.path.dirname(file)
    if not zipfile.is_zipfile(file):
        raise NoModel(f"{file} is not a .keras file (a zip archive) or is cut short: was "
                      "it damaged, or copied while it was written?")
    try:
        with zipfile.ZipFile(file) as archive:
            compile_config = json.loads(archive.read("config.json")).get("compile_config")
        # Compiled afterwards, from the file's compile config: loading the training
        # optimizer's state (a loss-scale wrapper under mixed_float16) is not needed.
        model = registry.load_model(file, compile=False)
    except (zipfile.BadZipFile, KeyError, EOFError, json.JSONDecodeError) as error:
        raise NoModel(f"{file} is a damaged .keras file ({type(error).__name__}: "
                      f"{error}).") from None
    except Exception as error:  # noqa: BLE001 - any fault of a file is one sentence
        if "safe_mode" in str(error):
            # A layer that carries Python code (a Lambda): Keras' safe mode refuses it.
            raise NoModel(f"{file} holds Python code (a Lambda layer's function), which "
                          "loading refuses: a model of this project has none, so the file "
                          "comes from elsewhere. If you trust it, load it with "
                          "keras.saving.load_model(..., safe_mode=False).") from None
        # A configuration naming classes or arguments no model of this project has (a
        # file from elsewhere, or edited): what Keras said, on one line.
        raise NoModel(f"{file} is not a model this project can read "
                      f"({_one_line(error)}).") from None
    if model.preprocessor is None:
        from dsan_tf.data.preprocessor import NLIPreprocessor

        model.preprocessor = NLIPreprocessor.load(path)
    return model, compile_config
