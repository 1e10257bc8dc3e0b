"""An ensemble of trained classifiers as one Keras model: the mean of their class
probabilities (the ensembles of AF-DMN, Section 5.3, and of the Gaussian Transformer,
Tables 2-3).

Shape legend: B pairs, C classes, T1/T2 premise/hypothesis tokens.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.models import registry
from dsan_tf.models.text_model import TextModel


@keras.saving.register_keras_serializable(package="dsan_tf")
class NLIEnsemble(TextModel, keras.Model):
    """Averages the class probabilities of `NLIClassifier`s, which may differ in model
    family and vocabulary: each reads the text with its own preprocessor.

    Args:
        members: `NLIClassifier`s with the same label names (`label_names`), at least
            one.
        compile: compile it with the paper's setup, as an `NLIClassifier` comes (its
            `evaluate` and `fit` work at once); False leaves it uncompiled.

    Call arguments:
        inputs: {"member_<i>": {"premise": int [B, T1], "hypothesis": int [B, T2]}} (each
            member's ids, `input_keys`), or one {"premise", "hypothesis"} dict that every
            member reads (members that share a vocabulary).

    Returns:
        float32 [B, C]: log of the mean probabilities, so that softmax (`predict`) gives
        the mean itself and the training loss reads them as logits.

    Examples:
    ```python
    from dsan_tf.models import NLIClassifier, NLIEnsemble

    member = NLIClassifier.from_preset("dsan_snli25k_glove50", compile=False)
    ensemble = NLIEnsemble([member, member])
    ensemble.predict({"premise": ["A man sleeps."], "hypothesis": ["A man rests."]})  # [1, 3]
    ```
    """

    def __init__(self, members, compile=True, **kwargs):
        super().__init__(**kwargs)
        if not members:
            raise ValueError("an ensemble needs at least one member.")
        self.members = list(members)
        named = sorted({", ".join(m.label_names) for m in self.members if m.label_names})
        if len(named) > 1:  # their probabilities would not describe the same classes
            raise ValueError(f"the members name different labels ({'; '.join(named)}): an "
                             "ensemble averages probabilities of the same labels.")
        self.built = True  # the members are
        if compile:
            self.compile(build_optimizer=False)

    @classmethod
    def from_preset(cls, preset, compile=True, dtype=None, load_weights=True, **kwargs):
        """`TextModel.from_preset` of an ensemble's preset, run directory or export;
        ValueError, one sentence, for one model's."""
        model = super().from_preset(preset, compile=compile, dtype=dtype,
                                    load_weights=load_weights, **kwargs)
        if not isinstance(model, cls):
            raise ValueError(f"{preset} holds one {type(model).__name__}, not an ensemble: "
                             f"load it with {type(model).__name__}.from_preset, or make "
                             f"an {cls.__name__} of such members.")
        return model

    @property
    def preprocessor(self):
        """The first member's preprocessor when every member has one (text is accepted),
        else None."""
        found = [member.preprocessor for member in self.members]
        return found[0] if all(p is not None for p in found) else None

    def preprocessors(self):
        return [member.preprocessor for member in self.members]

    def input_keys(self):
        return [f"member_{index}" for index in range(len(self.members))]

    def encode(self, sentences, batch_size=None, return_truncated=False):
        """Refused, in one sentence: an ensemble has no sentence vectors of its own."""
        raise ValueError("an ensemble averages its members' probabilities and has no "
                         "sentence vectors of its own (a member's: "
                         "dsan_tf.load(EXPORT_DIR/VERSION/members/N).encode).")

    def call(self, inputs, training=None):
        shared = "premise" in inputs
        probabilities = [
            ops.softmax(ops.cast(member(inputs if shared else inputs[key], training=training),
                                 "float32"), axis=-1)
            for member, key in zip(self.members, self.input_keys())]
        return ops.log(ops.maximum(sum(probabilities) / len(probabilities), 1e-30))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "members": [keras.layers.serialize(member) for member in self.members]}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["members"] = [keras.layers.deserialize(member) for member in config["members"]]
        # Keras' loaders compile it from the file's own compile config when asked.
        return cls(**config, compile=False)


# A task model holds any family's backbone: importing it registers every Keras class of the
# project (`registry.register_keras_classes`), so that Keras' loaders read any `.keras` file
# of ours after it, as keras-hub's read theirs after `import keras_hub`.
registry.register_keras_classes()
