r"""The size of a model's training program as its backend builds it, and what building it
costs, followed without a GPU (a smaller program compiles faster everywhere).
`benchmarks.benchmark` reports it (`program`) at its first length:

- the gradient (forward pass, loss, backward pass) and the whole training step (the
  gradient and the optimizer's update of every trainable variable);
- on TensorFlow: the graph's op count and the seconds to trace it;
- on JAX: the HLO instruction count before XLA's optimisation and after it, and the
  seconds to lower and to compile it.

And what a GPU would run, without one (`--gpu_kernels`, JAX with its CUDA plugin: `pip
install "jax[cuda13]"`, no GPU or driver needed): the training step of a configuration
compiled by XLA for an H100 (deviceless compilation), the kernels it launches a step and
about the bytes they move. On a GPU a step of this model is bound by
its kernels and what they move, not their arithmetic (docs/PERFORMANCE.md, "What a GPU
runs"):

    JAX_PLATFORMS=cpu KERAS_BACKEND=jax python -m benchmarks.program_size --gpu_kernels \
        [--shape=23x24] [--steps=32] [--config=dsan_snli] [--size=field=integer,...] \
        [--target=GPU_CHECK_RECORD.json]
"""

import argparse
import collections
import json
import math
import os
import re
import sys
import time

import keras
import numpy as np

# An HLO instruction: `name = type op(...)`, with `ROOT` before the last of a computation.
INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=\s", re.M)

VOCAB_SIZE = 20_000  # a frozen embedding's lookup costs the same at any size


def batches(batch_size, premise, hypothesis, count, seed=0):
    """`count` batches of random ids at one shape, and labels: ({premise, hypothesis}:
    int32 [batch_size · count, T], int [batch_size · count])."""
    rng = np.random.default_rng(seed)
    ids = lambda length: rng.integers(2, VOCAB_SIZE, (batch_size * count, length)).astype(  # noqa: E731
        "int32")
    return {"premise": ids(premise), "hypothesis": ids(hypothesis)}, rng.integers(
        0, 3, batch_size * count)


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


# XLA's description of an NVIDIA H100 80GB HBM3, as `jax.lib.xla_client.
# get_topology_for_devices(jax.devices()).target_config` gives it on one (the H200 is the
# same GH100 chip, 132 SMs, with more and faster memory).
H100_TARGET = """
gpu_device_info {
  threads_per_block_limit: 1024 threads_per_warp: 32 shared_memory_per_block: 49152
  shared_memory_per_core: 233472 threads_per_core_limit: 2048 core_count: 132
  fpus_per_core: 128 block_dim_limit_x: 2147483647 block_dim_limit_y: 65535
  block_dim_limit_z: 65535 memory_bandwidth: 3352320000000 l2_cache_size: 52428800
  clock_rate_ghz: 1.98 device_memory_size: 84929347584
  shared_memory_per_block_optin: 232448 cuda_compute_capability { major: 9 }
  registers_per_core_limit: 65536 registers_per_block_limit: 65536
}
runtime_version { major: 12 minor: 8 }
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 7 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""

def device_target():
    """XLA's description of the GPU JAX computes on (text, as `H100_TARGET`), or None
    elsewhere: what a GPU session records (`benchmarks.gpu_check`) so that deviceless
    compiles can describe that very device (`--target`)."""
    try:
        import jax
        from jax._src.lib import xla_client

        return str(xla_client.get_topology_for_devices(jax.devices()).target_config)
    except Exception:  # noqa: BLE001 - a CPU has none; a JAX without the attribute either
        return None


def read_target(path):
    """The target description in `path`: a GPU check's record (its `target_config`) or a
    text file of one."""
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    if path.endswith(".json"):
        text = json.loads(text).get("target_config")
        if not text:
            raise ValueError(f"{path} has no target_config: it was not run on a GPU.")
    return text


# Instructions that launch nothing: buffers and their bookkeeping.
BOOKKEEPING = {"parameter", "get-tuple-element", "tuple", "bitcast", "constant",
               "after-all", "opt-barrier", "partition-id", "replica-id"}
_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s([\w\-]+)\(([^)]*)\)")
_ARRAY = re.compile(r"\b(pred|[subf]\d+|bf16)\[([\d,]*)\]")


def _bytes(shape):
    """Bytes of the arrays in an HLO shape ("f32[2,300]{1,0}", or a tuple of them)."""
    total = 0
    for dtype, dims in _ARRAY.findall(shape):
        size = 1 if dtype == "pred" else max(1, int(re.sub(r"\D", "", dtype)) // 8)
        total += size * math.prod(int(d) for d in dims.split(",") if d)
    return total


_SLICING = {"slice", "dynamic-slice", "gather"}


def _operands(text):
    """[(shape or "", name)] of an instruction's operand list: "%a, %b" as XLA prints an
    optimised module, "f32[2,3]{1,0} %a" with shapes, "/*index=5*/%f" past the fifth."""
    text = re.sub(r"/\*.*?\*/", "", text)
    return [(shape or "", name) for shape, name in
            re.findall(r"((?:\([^)]*\)|\w+\[[\d,]*\](?:\{[^}]*\})?)\s+)?%?([\w.\-]+)", text)]


def _sliced_reads(computations, fused):
    """{parameter index: bytes read} of the parameters of the fused computation `fused`
    that it reads only through slices (after free bitcasts): the slices' bytes."""
    users, parameters = collections.defaultdict(list), {}
    for name, op, _, shape, operands in computations.get(fused, ()):
        if op == "parameter":
            parameters[name] = int(operands)
            continue
        for position, (_, operand) in enumerate(_operands(operands)):
            users[operand].append((name, op, shape, position))
    reads = {}
    for name, index in parameters.items():
        total, frontier, only_slices = 0, [name], bool(users[name])
        while frontier and only_slices:
            for user, op, shape, position in users[frontier.pop()]:
                if op == "bitcast":
                    frontier.append(user)
                elif op in _SLICING and position == 0:
                    total += _bytes(shape)
                else:
                    only_slices = False
        if only_slices:
            reads[index] = total
    return reads


def _computations(hlo_text):
    """A module's text as ({computation: [(name, op, line, shape, operands)]}, the entry's
    name, {instruction: its shape})."""
    computations, current, entry, shapes = {}, None, None, {}
    for line in hlo_text.splitlines():
        opened = None if line.startswith(" ") else _COMPUTATION.match(line)
        if opened:
            current = opened.group(2)
            computations[current] = []
            entry = current if opened.group(1) else entry
        elif current and (found := _INSTRUCTION.match(line)):
            name, shape, op, operands = found.groups()
            shapes[name] = shape
            computations[current].append((name, op, line, shape, operands))
    return computations, entry, shapes


def gpu_kernels(hlo_text):
    """The kernels of one run of an optimised GPU module (`compiled.as_text()`): the entry
    computation's instructions but bookkeeping, a loop's body counted once (a scan of K
    steps runs it K times).

    Returns:
        {"kernels": the entry's and each loop body's once, "loop_body": the loops'
         bodies' alone, "by_kind": {"fusion:kLoop": n, "custom-call:TARGET": n, ...},
         "bytes": about what those kernels move: each writes its output once and reads
         its operands whole, but an operand that a fusion only slices (slice,
         dynamic-slice, gather: a step's batch out of the scan's stack, one direction's
         half of a projection) counts the slices it reads; a fusion may still read less,
         and a matmul rereads its tiles, so this is an estimate, not a measurement}.
    """
    computations, entry, shapes = _computations(hlo_text)
    kinds, body = collections.Counter(), collections.Counter()
    moved = [0]

    def visit(name, counter):
        for _, op, line, shape, operands in computations[name]:
            if op in BOOKKEEPING:
                continue
            if op == "while":  # its condition is evaluated on the device, its body run
                visit(re.search(r"body=%?([\w.\-]+)", line).group(1), body)
                continue
            if op == "custom-call":
                op += ":" + re.search(r'custom_call_target="([^"]+)"', line).group(1)
            elif op == "fusion":
                op += ":" + re.search(r"kind=(\w+)", line).group(1)
            counter[op] += 1
            sizes = [_bytes(given or shapes.get(operand, ""))
                     for given, operand in _operands(operands)]
            sliced = _sliced_reads(computations, re.search(
                r"calls=%?([\w.\-]+)", line).group(1)) if op.startswith("fusion") else {}
            moved[0] += _bytes(shape) + sum(min(size, sliced.get(index, size))
                                            for index, size in enumerate(sizes))

    visit(entry, kinds)
    return {"kernels": sum(kinds.values()) + sum(body.values()),
            "loop_body": sum(body.values()), "by_kind": dict((kinds + body).most_common()),
            "bytes": moved[0]}


def compile_for_gpu(function, *args, target=H100_TARGET):
    """`jax.jit(function)` for `args` (arrays, or anything with shape and dtype) compiled
    for the GPU `target` describes, without one (XLA's deviceless compilation; needs JAX's
    CUDA plugin). Returns (the optimised HLO text, compile seconds)."""
    import jax
    from jax.experimental import topologies

    topology = topologies.get_topology_desc(platform="cuda", target_config=target,
                                            topology="1x1x1")
    mesh = topologies.make_mesh(topo=topology, mesh_shape=(1,), axis_names=("x",))
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    abstract = jax.tree.map(lambda a: jax.ShapeDtypeStruct(
        np.shape(a), jax.numpy.asarray(a).dtype, sharding=replicated), args)
    lowered = jax.jit(function, donate_argnums=0).lower(*abstract)
    started = time.perf_counter()
    compiled = lowered.compile()
    return compiled.as_text(), round(time.perf_counter() - started, 2)


def training_step_kernels(model, batch, steps=1, target=H100_TARGET):
    """`gpu_kernels` of `model`'s compiled training step on `batch` ((x, y, sample
    weight)) for a GPU, or of `steps` steps as one scan (`multi_step`, a GPU's default);
    with "compile_seconds" on this machine."""
    from dsan_tf.speed import multi_step

    model.train_on_batch(*batch)  # builds the metrics' variables
    state = tuple([v.value for v in variables] for variables in (
        model.trainable_variables, model.non_trainable_variables,
        model.optimizer.variables, model.metrics_variables))
    if steps == 1:
        text, seconds = compile_for_gpu(model.train_step, state, batch, target=target)
    else:
        text, seconds = compile_for_gpu(multi_step.scanned_steps(model), state,
                                        [batch] * steps, target=target)
    return {**gpu_kernels(text), "compile_seconds": seconds}


def training_model(task, vocab_size=VOCAB_SIZE):
    """`task`'s model at seed 0, compiled for training with its step jit-compiled."""
    keras.utils.set_random_seed(0)
    model = task.build_model(vocab_size)
    task.compile(model, jit_compile=True)
    return model


def _kernels(task, batch, steps, target):
    """`training_step_kernels` of the task's model, compiled at seed 0."""
    return {"moments_per_variable": training_step_kernels(training_model(task), batch,
                                                          steps, target)}


def _usable_target(path):
    """The description in `path` (an H100's without one), once a trivial program compiled
    for it here; else the program exits saying why, in one line."""
    try:
        target = read_target(path) if path else H100_TARGET
    except (OSError, ValueError) as error:
        sys.exit(f"--target: {error}")
    try:
        compile_for_gpu(lambda x: x * 2, np.ones(2, "float32"), target=target)
    except Exception as error:  # noqa: BLE001 - whatever XLA says, said in one line
        sys.exit("--gpu_kernels compiles for a GPU without one: it needs JAX's CUDA plugin "
                 "(pip install \"jax[cuda13]\") and JAX_PLATFORMS=cpu "
                 f"({type(error).__name__}: {error}).")
    return target


def _parser():
    from dsan_tf.core.config import PRECISIONS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu_kernels", action="store_true", required=True,
                        help="count the kernels of the training step compiled for a GPU")
    parser.add_argument("--config", default="dsan_snli", help="a named configuration")
    parser.add_argument("--size", default="", help="field=integer,... over the configuration")
    parser.add_argument("--shape", default="23x24", help="premise x hypothesis tokens")
    parser.add_argument("--steps", type=int, default=1, help="steps as one scan (1: one)")
    parser.add_argument("--target", help="the GPU described in this file (a GPU check's "
                        "record, or a text file of XLA's description); default: an H100")
    parser.add_argument("--mixed_precision", default="none", choices=PRECISIONS,
                        help="Keras' dtype policy of the model (the training flag)")
    parser.add_argument("--output", help="append the JSON line to this file")
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    import keras

    from dsan_tf.core.config import ExperimentConfig, RunPolicy
    from dsan_tf.core.task import NLITask
    if keras.backend.backend() != "jax":
        sys.exit("--gpu_kernels compiles with JAX: run it with KERAS_BACKEND=jax.")
    target = _usable_target(args.target)
    if args.mixed_precision != "none":
        keras.config.set_dtype_policy(args.mixed_precision)
    fields = {key: int(value) for key, value in  # integers, as gpu_check's --size
              (pair.split("=", 1) for pair in args.size.split(",") if pair)}
    # As on a GPU: one pass of the encoder, the step compiled.
    config = ExperimentConfig.named(args.config, **fields)
    task = NLITask(config, RunPolicy(one_pass=True, jit_compile=True))
    size = config.data.batch_size
    x, y = batches(size, *(int(n) for n in args.shape.split("x")), 1)
    batch = (x, y, np.ones(size, "float32"))  # with sample weights, as NLIBatches feeds
    described = re.search(r'device_description_str: "([^"]*)"', target)
    kernels = _kernels(task, batch, args.steps, target)
    record = {"config": args.config, "size": fields, "shape": args.shape,
              "batch_size": size, "steps": args.steps,
              "dtype_policy": keras.config.dtype_policy().name,
              "target": described.group(1) if described else args.target,
              "xla_flags": os.environ.get("XLA_FLAGS", ""), **kernels}
    line = json.dumps(record)
    print(line)
    if args.output:
        with open(args.output, "a", encoding="utf-8") as stream:
            stream.write(line + "\n")


if __name__ == "__main__":
    main()
