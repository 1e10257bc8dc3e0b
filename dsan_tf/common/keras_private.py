"""The private Keras functions this project calls, in one place (`PRIVATE`): Keras may
change or remove them in any release, without a deprecation. Each is reached through a
function here; tests/test_code_shape.py fails by name when the installed Keras lacks one,
and no other module of the package calls a private Keras function or imports `keras.src`.
Keras is imported where a function needs it (the module is in `common`, which every layer
reads).
"""

import contextlib

# {where Keras defines it: the private names of it that are called here}
PRIVATE = {
    "keras.src.layers.layer.Layer": ("_flatten_layers",),
    # Keras' JAX trainer: a step function made from a stateless step, and the metrics'
    # update inside one.
    "keras.src.backend.jax.trainer.JAXTrainer": ("_make_function",
                                                 "_update_metrics_variables"),
    # Keras' switch for sharing objects by id() while a file loads.
    "keras.src.backend.common.global_state": ("get_global_attribute",
                                              "set_global_attribute"),
}
SHARED_OBJECTS = ("shared_objects/id_to_obj_map", "shared_objects/id_to_config_map")


def flatten_layers(layer):
    """Every layer inside `layer` (itself included), depth first."""
    return layer._flatten_layers()


def make_function(model, step, concatenate_outputs):
    """Keras' JAX step function around the stateless `step` (`concatenate_outputs`: a
    predict step's outputs joined over the batches)."""
    return model._make_function(step, concatenate_outputs=concatenate_outputs)


def update_metrics(model, metrics, loss, x, y, y_pred, sample_weight):
    """(logs, metrics' variables) after the compiled metrics saw one batch (JAX)."""
    return model._update_metrics_variables(metrics, loss, x, y, y_pred, sample_weight)


@contextlib.contextmanager
def no_object_sharing():
    """Layers made inside are never shared with objects a file being loaded named: Keras'
    loading shares objects by `id()`, and a layer made during it whose `id()` an earlier,
    freed object had gets that object back when it is serialized and deserialized."""
    from keras.src.backend.common import global_state

    saved = [global_state.get_global_attribute(key) for key in SHARED_OBJECTS]
    for key in SHARED_OBJECTS:
        global_state.set_global_attribute(key, None)
    try:
        yield
    finally:
        for key, value in zip(SHARED_OBJECTS, saved):
            global_state.set_global_attribute(key, value)
