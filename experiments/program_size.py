"""The size of a model's training program as its backend builds it, and what building it
costs: what issue 48 follows without a GPU (a smaller program compiles faster everywhere).
`experiments.benchmark` reports it (`program`) at its first length:

- the gradient (forward pass, loss, backward pass) and the whole training step (the
  gradient and the optimizer's update of every trainable variable);
- on TensorFlow: the graph's op count and the seconds to trace it;
- on JAX: the HLO instruction count before XLA's optimisation and after it, and the
  seconds to lower and to compile it.
"""

import re
import time

import keras
import numpy as np

# An HLO instruction: `name = type op(...)`, with `ROOT` before the last of a computation.
INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=\s", re.M)


def count_instructions(hlo_text):
    """Instructions in an HLO module's text (every computation's, fused ones included)."""
    return len(INSTRUCTION.findall(hlo_text))


def _loss_function(model):
    loss = getattr(model, "loss", None)
    if callable(loss):
        return loss
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def training_program(model, inputs, labels):
    """{"gradient": {...}, "step": {...}} for a compiled, built `model` on one batch, on the
    current backend (TensorFlow or JAX; others: {"skipped": why})."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow(model, inputs, labels)
    if backend == "jax":
        return _jax(model, inputs, labels)
    return {"skipped": f"program sizes are measured on TensorFlow and JAX, not {backend}"}


def _tensorflow(model, inputs, labels):
    import tensorflow as tf

    loss_of = _loss_function(model)
    variables = model.trainable_variables

    def gradient(x, y):
        with tf.GradientTape() as tape:
            loss = loss_of(y, model(x, training=True))
        return tape.gradient(loss, variables)

    def step(x, y):
        model.optimizer.apply(gradient(x, y), variables)

    result = {}
    for name, function in (("gradient", gradient), ("step", step)):
        started = time.perf_counter()
        graph = tf.function(function).get_concrete_function(inputs, labels).graph
        result[name] = {"graph_ops": len(graph.get_operations()),
                        "trace_seconds": round(time.perf_counter() - started, 3)}
    return result


def _jax(model, inputs, labels):
    import jax

    loss_of = _loss_function(model)
    trainable = [v.value for v in model.trainable_variables]
    others = [v.value for v in model.non_trainable_variables]
    optimizer = [v.value for v in model.optimizer.variables]

    def loss(trainable, others, x, y):
        logits, _ = model.stateless_call(trainable, others, x, training=True)
        return loss_of(y, logits)

    def step(trainable, others, optimizer_state, x, y):
        grads = jax.grad(loss)(trainable, others, x, y)
        return model.optimizer.stateless_apply(optimizer_state, grads, trainable)

    return {name: lower_and_compile(function, *args)[1] for name, function, args in (
        ("gradient", jax.grad(loss), (trainable, others, inputs, labels)),
        ("step", step, (trainable, others, optimizer, inputs, labels)))}


def lower_and_compile(function, *args):
    """`jax.jit(function)` lowered and compiled for `args`: (the compiled program,
    {"hlo_before_optimisation", "hlo_after_optimisation", "lower_seconds",
    "compile_seconds"})."""
    import jax

    started = time.perf_counter()
    lowered = jax.jit(function).lower(*args)
    lowered_seconds = time.perf_counter() - started
    before = count_instructions(lowered.as_text(dialect="hlo"))
    started = time.perf_counter()
    compiled = lowered.compile()
    return compiled, {"hlo_before_optimisation": before,
                      "hlo_after_optimisation": count_instructions(compiled.as_text()),
                      "lower_seconds": round(lowered_seconds, 3),
                      "compile_seconds": round(time.perf_counter() - started, 3)}


def measure(model, batch_size, length, vocabulary_size, seed=0):
    """`training_program` of `model` on random ids, premise and hypothesis `length` long,
    with the batch size and the length in the result."""
    rng = np.random.default_rng(seed)
    ids = lambda: rng.integers(2, vocabulary_size, (batch_size, length)).astype(  # noqa: E731
        "int32")
    inputs, labels = {"premise": ids(), "hypothesis": ids()}, rng.integers(0, 3, batch_size)
    model(inputs)  # built before any program is traced
    return {"batch_size": batch_size, "length": length,
            **training_program(model, inputs, labels)}
