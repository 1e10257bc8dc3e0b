"""Several training steps in one compiled program on JAX: with Keras'
`steps_per_execution` = K, `fit` hands the train function an iterator and the function
takes K batches from it. Keras' own calls its one-step program K times; this one runs the
K steps as one `lax.scan` of that step when the K batches share a shape, so the host
dispatches once per K steps (on an H200, paper configuration, batch 64, 23 x 24 tokens:
1.35 ms a step against 1.76 for the bare loop of the one-step program and 2.10 inside
`fit`; docs/PERFORMANCE.md, "The GPU check"). The scan's body is the one step, so it
compiles in about the time of one step's program.

A step whose sample weights are all 0 leaves every variable as it was (weights,
optimizer slots and step count, metrics, seeds): `NLIBatches(run_length=K)` fills each
shape's last run of K batches with such steps, so that every execution is one shape.
Batches of mixed shapes, or fewer than K at an epoch's end, run one by one through the
one-step program, as Keras runs them.
"""

from dsan_tf.common.frameworks import keras


def _shape_key(batch):
    # dtypes compared as objects: their names (str) cost 0.7 ms an execution of 32 steps
    # at the paper's size, where the device takes 43 ms.
    return tuple((getattr(leaf, "shape", None), getattr(leaf, "dtype", None))
                 for leaf in keras.tree.flatten(batch))


def _weights(batch):
    """The batch's sample weights, or None (Keras' (x, y, sample_weight) tuple)."""
    return batch[2] if isinstance(batch, (tuple, list)) and len(batch) == 3 else None


def applies(steps_per_execution, jit_compile):
    """Whether `fit` runs K = `steps_per_execution` steps as one program: on JAX, with a
    compiled step, K > 1 and no Keras distribution (its sharded steps stay Keras' own).
    `NLIBatches` is laid out in runs, with skip steps, exactly when this holds."""
    return (keras.backend.backend() == "jax" and steps_per_execution > 1
            and bool(jit_compile) and keras.distribution.distribution() is None)


def scanned_steps(model):
    """(state, K batches of one shape) -> (the last step's logs, state): `model`'s
    training step over the batches as one `lax.scan`, not jitted."""
    import jax  # the backend: loaded already
    import jax.numpy as jnp

    def scanned(state, batches):
        stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *batches)

        def body(carried, batch):
            logs, updated = model.train_step(carried, batch)
            weights = _weights(batch)
            if weights is not None:  # a step of weights all 0 changes nothing
                active = jnp.any(weights != 0)
                updated = jax.tree.map(lambda new, old: jnp.where(active, new, old),
                                       updated, carried)
            return updated, logs

        state, logs = jax.lax.scan(body, state, stacked)
        return jax.tree.map(lambda values: values[-1], logs), state

    return scanned


def jax_train_function(model, steps):
    """`fit`'s train function for `model` on JAX: (state, iterator) -> (logs, state),
    `steps` batches taken from the iterator and run as one scan when they share a shape.

    Args:
        model: a compiled Keras model on the JAX backend (its `train_step(state, data)`).
        steps: K, the model's `steps_per_execution`.
    """
    import jax  # the backend: loaded already

    one = jax.jit(model.train_step, donate_argnums=0)
    several = jax.jit(scanned_steps(model), donate_argnums=0)

    def train_function(state, iterator):
        batches = [next(iterator)]  # an exhausted iterator ends the epoch (Keras' own)
        try:
            while len(batches) < steps:
                batches.append(next(iterator))
        except StopIteration:
            pass
        if len(batches) == steps and len({_shape_key(b) for b in batches}) == 1:
            return several(state, batches)
        for batch in batches:
            logs, state = one(state, batch)
        return logs, state

    return train_function
