"""Model families (one package each, registered by name in `registry`) and the NLI task
model on top of any of their backbones (`NLIClassifier`). `build_model` makes one from a
family's name and configuration; `dsan_tf.load` reads one back (a `.keras` file, a run
directory, a preset, an export).

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

__all__ = ["Family", "build_backbone", "build_model", "family", "names",
           "register_keras_classes",
           "registry", *sorted(_EXPORTS)]


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


def build_backbone(name, config, vocabulary_size):
    """The backbone of model family `name` with the hyperparameters of `config` that
    apply to it."""
    return family(name).backbone(config, vocabulary_size)


def build_model(name=registry.DEFAULT, config=None, word_vectors=None, one_pass=False):
    """An `NLIClassifier` on the backbone of family `name`.

    Args:
        name: a registered family (`names()`).
        config: the family's configuration (`model_config(name, ...)` of
            `dsan_tf.core.config`); its paper's hyperparameters when None. An unset
            `trainable_embeddings` trains the embeddings when no `word_vectors` are given
            and freezes given ones; its `vocab_size` may be None when they are given.
        word_vectors: optional float array [V, W] (row 0, padding, becomes zeros), W the
            family's `feature_width` (the Gaussian Transformer: word vectors and character
            5-gram vectors side by side, as `NLITask.build_model` makes them); without it
            the embeddings start random, U(-0.05, 0.05).
        one_pass: premise and hypothesis through the backbone in one call
            (`NLIClassifier`'s `one_pass`; `RunPolicy.one_pass` decides it for runs).

    Returns:
        `NLIClassifier` with int32 inputs {"premise": [B, T1], "hypothesis": [B, T2]} and
        float32 logits [B, C] in the order of `dsan_tf.common.labels.LABELS`.
    """
    import dataclasses

    import numpy as np

    from dsan_tf.models.nli_classifier import NLIClassifier

    chosen = family(name)
    config = config or chosen.config()
    registry.check_config(name, config)
    if config.trainable_embeddings is None:  # unset: random vectors must be learned
        config = dataclasses.replace(config, trainable_embeddings=word_vectors is None)
    vocabulary_size = config.vocab_size
    if word_vectors is not None:
        shape, width = np.shape(word_vectors), chosen.feature_width(config)
        if len(shape) != 2 or shape[1] != width:
            raise ValueError(f"word vectors have shape {shape}, expected [vocab_size, "
                             f"{width}] (the {name} family's feature width).")
        if vocabulary_size is not None and vocabulary_size != shape[0]:
            raise ValueError(f"vocab_size={vocabulary_size} but the word vectors have "
                             f"{shape[0]} rows.")
        vocabulary_size = shape[0]
    if vocabulary_size is None:
        raise ValueError("give the configuration's vocab_size or word vectors.")
    backbone = chosen.backbone(config, vocabulary_size)
    model = NLIClassifier(backbone, num_classes=config.num_classes,
                          layer_norm_epsilon=config.layer_norm_epsilon, name=name,
                          one_pass=one_pass, **chosen.head(config))
    if word_vectors is not None:
        backbone.set_word_vectors(word_vectors)
    return model
