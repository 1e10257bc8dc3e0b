"""dsan_tf: Distance-based Self-Attention Network (Im & Cho, 2017) in TensorFlow 2 / Keras 3.

Names load on first use, so that `import dsan_tf.core.config` (and a program's
`--help`) does not load TensorFlow. Each Keras class registers where it is defined, and
importing a task model (`dsan_tf.NLIClassifier`, `dsan_tf.NLIEnsemble`) imports every
family's, so that Keras' own loaders read any `.keras` file of the project after it
(`dsan_tf.load` needs nothing first), as after `import keras_hub`.
"""

import importlib

from dsan_tf.common import quiet
from dsan_tf.version import __version__

# name -> module that defines it
_EXPORTS = {
    "DSANConfig": "dsan_tf.models.dsan.config", "DataConfig": "dsan_tf.core.config",
    "ExperimentConfig": "dsan_tf.core.config", "TrainingConfig": "dsan_tf.core.config",
    "MODELS": "dsan_tf.core.config", "ModelConfig": "dsan_tf.core.config",
    "model_config": "dsan_tf.core.config",
    "LABELS": "dsan_tf.common.labels", "LABEL_IDS": "dsan_tf.common.labels",
    "Backbone": "dsan_tf.models", "NLIClassifier": "dsan_tf.models",
    "NLIEnsemble": "dsan_tf.models", "PairBackbone": "dsan_tf.models", "SentenceEncoderBackbone": "dsan_tf.models",
    "build_model": "dsan_tf.core.task",
    "NLIPreprocessor": "dsan_tf.data",
    "NLITask": "dsan_tf.core.task",
    "load": "dsan_tf.saving.serving",
    "SavedModelClassifier": "dsan_tf.saving.serving",
}
# The packages, by their role (docs/DEVELOPMENT.md, "Layers"), and the short public names of
# the modules users reach most (`from dsan_tf import serving`), where each file lives.
_PACKAGES = ("common", "layers", "data", "models", "core", "evaluation", "saving",
             "training", "programs")
_MODULES = {"analysis": "dsan_tf.evaluation.analysis", "config": "dsan_tf.core.config",
            "labels": "dsan_tf.common.labels", "masks": "dsan_tf.layers.masks",
            "metrics": "dsan_tf.evaluation.metrics",
            "optimization": "dsan_tf.core.optimization",
            "plots": "dsan_tf.evaluation.plots", "serving": "dsan_tf.saving.serving",
            "task": "dsan_tf.core.task"}

__all__ = sorted(_EXPORTS) + list(_PACKAGES) + list(_MODULES) + ["configs", "presets"]


def presets():
    """{name: what it is} of the trained models this package ships, loaded by name with no
    training and no data: `dsan_tf.load(name)`, `NLIClassifier.from_preset(name)`."""
    from dsan_tf.models import registry

    return registry.preset_descriptions()


def configs():
    """{name: what it is} of the named training configurations (`ExperimentConfig.named(
    name, **overrides)`; every training program's `--config=NAME`): the papers'
    configurations, the study's configuration and the demo."""
    from dsan_tf.models import registry

    return {name: description for name, (_, description) in registry.configs().items()}


# The names that load without Keras. Every other name (not a submodule: `from dsan_tf
# import models` must stay light for the programs' --help) loads Keras, and TensorFlow when
# it is the backend, first, without their start-up C++ log lines (`dsan_tf.common.quiet`).
_PLAIN = {"dsan_tf.core.config", "dsan_tf.common.labels", "dsan_tf.models.dsan.config"}


def __getattr__(name):
    if name in _EXPORTS:
        if _EXPORTS[name] not in _PLAIN:
            quiet.load_frameworks()
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _PACKAGES:
        return importlib.import_module(f"dsan_tf.{name}")
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name.endswith(("Backbone", "Config")):  # a family's (dsan_tf.DSANBackbone, ...)
        if name.endswith("Backbone"):
            quiet.load_frameworks()
        try:
            return getattr(importlib.import_module("dsan_tf.models"), name)
        except AttributeError:
            pass
    raise AttributeError(f"module 'dsan_tf' has no attribute {name!r}")

