"""Each family's part of the shared tests, found by its name: `dsan_tf/models/<name>/
testing.py` (beside the family's code, as keras-hub keeps each model's tests; setup.py
leaves these modules out of the wheel), holding `SMALL` ({field: value} of its smallest
model) and `layer_cases(x [B, T, D], mask [B, T], heads)` ({case: (layer class, constructor
arguments, positional inputs, keyword inputs, output shape, float32 output whatever the
policy)}). A family without one is built at its defaults and has no layer case (the battery
then names each of its layers as missing)."""

import importlib

from dsan_tf.models import registry


def _testing(name):
    registry.family(name)  # a family's name, else ValueError naming the choices
    try:
        return importlib.import_module(f"dsan_tf.models.{name}.testing")
    except ModuleNotFoundError as error:
        if error.name != f"dsan_tf.models.{name}.testing":
            raise
        return None


def small(name):
    """{field: value} of family `name`'s smallest model (its testing.py's `SMALL`)."""
    return dict(getattr(_testing(name), "SMALL", {}))


def layer_cases(name, x, mask, heads):
    """Family `name`'s layer cases on `x`, `mask`, `heads` ({} without any)."""
    made = getattr(_testing(name), "layer_cases", None)
    return made(x, mask, heads) if made else {}
