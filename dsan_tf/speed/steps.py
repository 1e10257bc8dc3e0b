"""The one place where what makes a model's steps fast meets the model: `attach` fills a
compiled model's Keras step-function slots (`train_function`, `test_function`,
`predict_function`) with the steps of this package where they apply, and leaves Keras' own
everywhere else. `TextModel.compile` calls `attach` with its `sentence_programs` argument
(the run's choice, where `NLITask.compile` passes it).

K steps as one scan are decided by the compile arguments alone, and set at once. Whether
per-length programs apply also depends on the built model (its variables, its backbone),
which a model compiled before its first batch does not have yet: their slots are filled at
their first call.
"""

from dsan_tf.common import keras_private
from dsan_tf.speed import multi_step
from dsan_tf.speed import sentence_programs as per_length

KINDS = ("train", "test", "predict")


def attach(model, sentence_programs=None):
    """Gives the compiled `model` this package's steps where they apply (JAX; elsewhere
    nothing changes).

    Args:
        model: a compiled Keras model (an `NLIClassifier`, an `NLIEnsemble`).
        sentence_programs: JAX's steps of per-length programs
            (`dsan_tf.speed.sentence_programs`): True, False, or None (where the step
            runs on a CPU).
    """
    model.sentence_programs = sentence_programs
    model._programs = None
    if multi_step.applies(model.steps_per_execution, model.jit_compile) \
            and not model.run_eagerly:
        model.train_function = multi_step.jax_train_function(model, model.steps_per_execution)
    elif per_length.wanted(model):
        # Whether they apply depends on the built model: decided at the first call. (Where
        # they cannot, Keras' own steps are left to Keras, which makes its sharded steps
        # under a distribution before `fit` hands the variables' values to the step.)
        for kind in KINDS:
            setattr(model, f"{kind}_function", _FirstCall(model, kind))


def programs(model):
    """`model`'s `SentencePrograms` (made once), or None where they do not apply."""
    if getattr(model, "_programs", None) is None and per_length.applies(model):
        model._programs = per_length.SentencePrograms(model)
    return getattr(model, "_programs", None)


def _made(model, kind):
    """The step function of `kind` for `model`: per-length programs (`sentence_programs`)
    where they apply, else Keras' own."""
    made = programs(model)
    if made is not None:
        return keras_private.make_function(model, getattr(made, f"{kind}_step"),
                                           concatenate_outputs=kind == "predict")
    setattr(model, f"{kind}_function", None)
    getattr(type(model), f"make_{kind}_function")(model, force=True)
    return getattr(model, f"{kind}_function")


class _FirstCall:
    """A step-function slot that makes its function at the first call and puts it in its
    place."""

    def __init__(self, model, kind):
        self.model, self.kind = model, kind

    def __call__(self, *args, **kwargs):
        function = _made(self.model, self.kind)
        setattr(self.model, f"{self.kind}_function", function)
        return function(*args, **kwargs)
