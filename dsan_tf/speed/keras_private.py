"""The private Keras functions this project calls, in one place (`PRIVATE`): Keras may
change or remove them in any release, without a deprecation. Each is reached through a
function here; tests/test_code_shape.py fails by name when the installed Keras lacks one,
and no other module of the package calls a private Keras function.
"""

# {where Keras defines it: the private names of it that are called here}
PRIVATE = {
    "keras.src.layers.layer.Layer": ("_flatten_layers",),
    # Keras' JAX trainer: a step function made from a stateless step, and the metrics'
    # update inside one.
    "keras.src.backend.jax.trainer.JAXTrainer": ("_make_function",
                                                 "_update_metrics_variables"),
}


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
