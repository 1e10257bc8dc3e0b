"""Model families (one package each, registered by name in `registry`) and the NLI task
model on top of any of their backbones (`NLIClassifier`). `dsan_tf.build_model` makes one
from a family's name and configuration; `dsan_tf.load` reads one back (a `.keras` file, a
run directory, a preset, an export).

Importing this package loads no Keras: the backbones and layers load on first use.
"""

import importlib

from dsan_tf.models import registry
from dsan_tf.models.registry import Family, family, names, register_keras_classes

_EXPORTS = {
    "Backbone": "dsan_tf.models.backbone",
    "PairBackbone": "dsan_tf.models.backbone",
    "SentenceEncoderBackbone": "dsan_tf.models.backbone",
    "NLIClassifier": "dsan_tf.models.nli_classifier", "NLIEnsemble": "dsan_tf.models.ensemble",
    "TextModel": "dsan_tf.models.text_model",
}

__all__ = ["Family", "family", "names", "register_keras_classes", "registry",
           *sorted(_EXPORTS)]


def __getattr__(name):
    """The shared classes, and each family's public names (`DSANBackbone`, ...), which
    its package exports."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    for package in registry.PACKAGES:
        try:
            return getattr(importlib.import_module(f"dsan_tf.models.{package}"), name)
        except AttributeError:
            continue
    raise AttributeError(f"module 'dsan_tf.models' has no attribute {name!r}")
