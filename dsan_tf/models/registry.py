"""The model families by name. Each family lives in its own package,
`dsan_tf.models.<name>` (its layers, backbone and configuration), and registers one `Family`
when imported; `PACKAGES` lists them, as found in dsan_tf/models (adding a family is adding
its folder). Plain Python: a family's builders import Keras only
when called, so programs can list and check families without loading it.

It also knows every module that defines a Keras class of the project
(`register_keras_classes`, which `load_model` and the preset loader call first), so that
the loaders need none of those modules themselves.
"""

import dataclasses
import importlib
import importlib.resources
import json
import os
import pkgutil
import re
from typing import Callable

# The order listings show the project's families in; a family's package (a folder of
# dsan_tf/models whose __init__ registers it) is found without a line here, and a new one is
# listed after these, by name.
ORDER = ("dsan", "disan", "cbow", "gaussian_transformer", "afdmn")


def _packages():
    found = [module.name for module in pkgutil.iter_modules([os.path.dirname(__file__)])
             if module.ispkg]
    return tuple(sorted(found, key=lambda name: (
        ORDER.index(name) if name in ORDER else len(ORDER), name)))


# The packages of dsan_tf/models, each a family's.
PACKAGES = _packages()
DEFAULT = ORDER[0]  # the model this project reproduces; the others are its rivals

_FAMILIES = {}


@dataclasses.dataclass(frozen=True)
class Family:
    """What the rest of the project needs to know of a model family.

    Attributes:
        name: the `--model` value.
        paper: the paper it reproduces, as the model card cites it.
        config: its configuration class (a `dsan_tf.models.config.ModelConfig` with its
            own fields; defaults are its paper's).
        backbone: (config, vocabulary_size) -> its `Backbone` (imports Keras).
        head: (config) -> keyword arguments of `NLIClassifier`'s head (its paper's
            prediction layers).
        modules: the modules that define its Keras classes, imported before a `.keras`
            file is read.
        feature_width: (config) -> width of the frozen token features `build_model` takes
            (the word vectors, unless the family adds its own).
        token_features: None, or (config, vocabulary, word_vectors, seed) -> float32 [V,
            feature_width]: features made from the vocabulary beside the word vectors.
        forward_flops: None, or (config, premise_length, hypothesis_length) -> FLOPs of one
            pair's forward pass (the benchmark's roofline).
        paper_parameters: the paper's parameter count, as printed ("4.7M"), or "".
        sentence_figures: its backbone shows one sentence's attention, gates and pooling
            (`sentence_intermediates`: `dsan-train --probe_sentence`, the Section
            5.5 figures).
        pair_input: its backbone reads premise and hypothesis together
            (`Backbone.pair_input`): no sentence vectors, and no programs per sentence
            length (`dsan_tf.speed.sentence_programs`).
    """

    name: str
    paper: str
    config: type
    backbone: Callable
    head: Callable
    modules: tuple
    feature_width: Callable = lambda config: config.embedding_dim
    token_features: Callable | None = None
    forward_flops: Callable | None = None
    paper_parameters: str = ""
    sentence_figures: bool = False
    pair_input: bool = False


def register(family):
    """Adds `family` (a `Family`) under its name; called by its package on import."""
    if family.name not in PACKAGES:
        raise ValueError(f"model family {family.name!r}: its package must be named as it, "
                         f"dsan_tf/models/{family.name}/ (registry.PACKAGES: those found).")
    if family.name in _FAMILIES and _FAMILIES[family.name] != family:
        raise ValueError(f"model family {family.name!r} is registered twice.")
    _FAMILIES[family.name] = family
    return family


def _load():
    for package in PACKAGES:
        importlib.import_module(f"dsan_tf.models.{package}")


def names():
    """The registered families' names, in `PACKAGES` order (whichever was imported
    first)."""
    _load()
    return tuple(name for name in PACKAGES if name in _FAMILIES)


def family(name):
    """The `Family` called `name`; ValueError naming the choices otherwise."""
    _load()
    if name not in _FAMILIES:
        raise ValueError(f"model must be one of {names()}, got {name!r}.")
    return _FAMILIES[name]


@dataclasses.dataclass(frozen=True)
class NamedConfig:
    """A named training configuration: a flagfile in a family's `configs/` folder, or in
    `dsan_tf/models/configs/` for the settings every family shares (the demo, the study's
    data), the one place it is written (`--config=NAME`, or `--flagfile=` its path).

    Attributes:
        name: its file's name without `.cfg` (`--config=NAME`).
        family: the family whose folder holds it; for a shared one, the model it names
            (`--model`), else the default (`DEFAULT`): the model it trains.
        path: the flagfile.
        description: its leading comment's first sentence.
        base: the named configuration under it (its `# base: NAME` line), or None.
        flags: {flag name: value text as written, or True / False for absl's bare
            boolean forms `--NAME` / `--noNAME`} (the configuration's field types read the
            text: `dsan_tf.core.config.named_values`).
    """

    name: str
    family: str
    path: str
    description: str
    base: str | None
    flags: dict


def _read_config(family, path):
    comments, flags, base = [], {}, None
    with open(path, encoding="utf-8") as stream:
        for line in map(str.strip, stream):
            if line.startswith("# base:"):
                base = line.split(":", 1)[1].split()[0]
            elif line.startswith("#") and not flags:
                comments.append(line.lstrip("# "))
            elif line.startswith("--"):
                key, has_value, value = line[2:].partition("=")
                if has_value:
                    flags[key] = value
                else:  # absl's boolean forms: --NAME and --noNAME
                    negated = key.startswith("no")
                    flags[key[2:] if negated else key] = not negated
    text = " ".join(comments)
    # Its first sentence (not cut at "et al." or "e.g.").
    description = re.split(r"(?<!\bal)(?<!e\.g)\.(?:\s|$)", text)[0] + "." if text else ""
    name = os.path.basename(path)[:-len(".cfg")]
    return NamedConfig(name, family, path, description, base, flags)


def _model_files(folder_name):
    """(family name, entry) of each entry of the `folder_name` folder that every family
    shares (`dsan_tf/models/<folder_name>`, family None), then of every family's, in
    `PACKAGES` order; each folder's by name."""
    for family_name in (None, *names()):
        package = "dsan_tf.models" + (f".{family_name}" if family_name else "")
        folder = importlib.resources.files(package) / folder_name
        if folder.is_dir():
            for entry in sorted(folder.iterdir(), key=lambda entry: entry.name):
                yield family_name, entry


def named_configs():
    """{name: `NamedConfig`} of the shared configurations, then every family's
    `configs/*.cfg` in `PACKAGES` order; ValueError when two use one name."""
    found = {}
    for family_name, entry in _model_files("configs"):
        if entry.name.endswith(".cfg"):
            config = _read_config(family_name, os.fspath(entry))
            if family_name is None:
                config = dataclasses.replace(config, family=config.flags.get("model", DEFAULT))
            if config.name in found:
                raise ValueError(f"configuration {config.name!r} is in both "
                                 f"{os.path.dirname(found[config.name].path)} and "
                                 f"{os.path.dirname(config.path)}.")
            found[config.name] = config
    return found


def configs():
    """{configuration name: (family name, what it is)} of every family's named training
    configurations (`named_configs`)."""
    return {name: (config.family, config.description)
            for name, config in named_configs().items()}


def config_flags(config):
    """{flag name: value as written} of the named configuration `config`, its base's under
    its own, "model" its family's; ValueError naming the configurations otherwise."""
    known = named_configs()
    if config not in known:
        raise ValueError(f"no configuration {config!r}; the configurations: "
                         f"{', '.join(known)}.")
    named = known[config]
    return {**(config_flags(named.base) if named.base else {}), **named.flags,
            "model": named.family}


def trained_presets():
    """{name: (directory, what it is)} of the trained models the package ships, loadable
    by name (`dsan_tf.presets()`): each family's `trained/<name>/` folders that hold a
    preset (metadata.json, whose "description" says what it is), in `PACKAGES` order."""
    found = {}
    for _, entry in _model_files("trained"):
        if (entry / "metadata.json").is_file():
            metadata = json.loads((entry / "metadata.json").read_text(encoding="utf-8"))
            found[entry.name] = (os.fspath(entry), metadata.get("description", ""))
    return found


def preset_descriptions():
    """{name: what it is} of the trained presets (`trained_presets` without folders):
    `dsan_tf.presets()` and `NLIClassifier.presets`."""
    return {name: description for name, (_, description) in trained_presets().items()}


def check_config(name, config):
    """Raises ValueError when `name` is no family or `config` is not its configuration
    (each configuration checks its own values when made)."""
    expected = family(name).config
    if not isinstance(config, expected):
        raise ValueError(f"model {name!r} needs its configuration class "
                         f"{expected.__name__}, got a {type(config).__name__} "
                         f"(dsan_tf.model_config({name!r}, ...) makes one).")


def lazy_attributes(package, exports):
    """A module-level `__getattr__` for a family's package: each name of `exports`
    ({name: submodule}) is imported from `package.submodule` on first use, so importing
    the package (and registering the family) loads no Keras."""
    def __getattr__(name):
        if name in exports:
            return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__


# The modules that define the shared Keras classes (the families' are their `modules`).
KERAS_MODULES = ("dsan_tf.models.optimizers", "dsan_tf.layers", "dsan_tf.models.nli_classifier",
                 "dsan_tf.models.ensemble", "dsan_tf.data.preprocessor")


_REGISTERED = []  # once every module is imported (a task model's import calls it again)


def register_keras_classes():
    """Imports every module that defines a Keras class of the project (each registers its
    own with Keras' decorator, for `.keras` files); the preprocessor's needs TensorFlow:
    without it, ids only. The task models' modules call it when imported."""
    if _REGISTERED:
        return
    _REGISTERED.append(True)
    for module in (*KERAS_MODULES, *(module for name in names()
                                     for module in family(name).modules)):
        try:
            importlib.import_module(module)
        except ImportError as error:
            if getattr(error, "name", None) != "tensorflow":
                raise


def load_model(path, compile=True):
    """A `.keras` file of any family or an ensemble (`keras.saving.load_model` does the
    same once a task model's class is imported, which registers every class)."""
    import warnings

    from dsan_tf.common.frameworks import keras

    register_keras_classes()
    with warnings.catch_warnings():
        if not compile:
            # A task model compiles itself when built, so Keras finds an optimizer without
            # state and skips the file's, as compile=False asks: no news to the caller.
            warnings.filterwarnings("ignore", "Skipping variable loading for optimizer")
        return keras.saving.load_model(path, compile=compile)
