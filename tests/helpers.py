"""What several test modules share: running the programs, random ids, and one battery of
checks every layer must pass (after keras-hub's `TestCase.run_layer_test`)."""

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import weakref

import keras
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
SMALL = dict(vocab_size=50, embedding_dim=24, num_heads=4, ffn_dim=48, classifier_units=16)


def config_for(name, **values):
    """The configuration of family `name` with those of `values` it has (tests share one
    size across families; a field one family lacks is left out)."""
    from dsan_tf.core.config import model_config
    from dsan_tf.models import registry

    known = {field.name for field in dataclasses.fields(registry.family(name).config)}
    return model_config(name, **{key: value for key, value in values.items() if key in known})


def command(program, *flags):
    """`python -m dsan_tf.programs.PROGRAM FLAGS...` (the study's: experiments; a
    measurement tool's: benchmarks)."""
    return [sys.executable, "-m", _program_module(program).__name__, *flags]


# Environment variables read once, when a process starts (Keras' backend, TensorFlow's
# oneDNN and log level): a program run with one of them set differently runs in a child.
START_UP = ("KERAS_BACKEND", "TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL", "XLA_FLAGS")


def cli(program, *flags, timeout=600, env=None, cwd=ROOT):
    """A program (`dsan-PROGRAM FLAGS...`) from the repository root, as a user runs it: in this process (`run_in_process`, the same flag parsing, main and exit status, no
    start-up of a new Python and TensorFlow), or in a child process where `env` sets a
    variable read at start-up (`START_UP`)."""
    env = env or {}
    if any(key in START_UP and os.environ.get(key) != value for key, value in env.items()):
        return cli_process(program, *flags, timeout=timeout, env=env, cwd=cwd)
    return run_in_process(program, *flags, env=env, cwd=cwd)


def cli_process(program, *flags, timeout=600, env=None, cwd=ROOT):
    """Runs `python -m dsan_tf.programs.PROGRAM FLAGS...` in a child process: for what only a
    process shows (its start-up, signals, file descriptors, the console scripts)."""
    return subprocess.run(command(program, *flags), cwd=cwd, env=dict(ENV, **(env or {})),
                          capture_output=True, text=True, timeout=timeout)


CHILD = """
import json, sys
for name in json.loads(sys.argv[3]):
    sys.modules[name] = None  # `import NAME` fails, as where it is not installed
sys.path.insert(0, sys.argv[1])
import helpers
done = [helpers.run_in_process(program, *flags) for program, flags in json.loads(sys.argv[2])]
print("\\n" + json.dumps([[d.returncode, d.stdout, d.stderr] for d in done]))
"""


def cli_in_child(runs, env, timeout=600, without=()):
    """Runs several programs one after the other in one child process started with `env`
    (e.g. `KERAS_BACKEND=jax`), the modules `without` unimportable there (e.g.
    "tensorflow", as on the GPU machines): one start-up for all of them. `runs` is a list of
    (program, [flags]); returns a `subprocess.CompletedProcess` per run."""
    child = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests"),
                            json.dumps([[program, list(flags)] for program, flags in runs]),
                            json.dumps(list(without))],
                           cwd=ROOT, env=dict(ENV, **env), capture_output=True, text=True,
                           timeout=timeout)
    assert child.returncode == 0, child.stderr[-3000:]
    results = json.loads(child.stdout.strip().splitlines()[-1])
    return [subprocess.CompletedProcess([program, *flags], *result)
            for (program, flags), result in zip(runs, results)]


def _program_module(name):
    import importlib

    for package in ("dsan_tf.programs", "experiments", "benchmarks"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{package}.{name}":
                raise
    raise ValueError(f"no program {name}")


def _reset_flags():
    """Removes every flag this project defined, so the next program defines its own
    afresh (programs define flags of one name differently: --output, --workdir)."""
    from dsan_tf.programs import flags as project_flags

    values = project_flags.FLAGS
    for flag in project_flags.project_flags(values):
        delattr(values, flag.name)
    project_flags._DEFINED.clear()
    project_flags.TOPIC_OF.clear()


def run_in_process(program, *flags, env=None, cwd=ROOT):
    """Runs a program as `dsan-PROGRAM FLAGS...` would, in this process:
    its flags defined afresh and parsed by the program's own parser, its `main` called as
    absl's `app.run` calls it, in `cwd` (the repository root). Returns a
    `subprocess.CompletedProcess`: the exit status (`sys.exit`'s message goes to stderr,
    status 1, as Python does) and what was printed to stdout and stderr (absl's log lines
    included)."""
    import contextlib
    import io

    from absl import logging

    from dsan_tf.programs import program as programs

    module = _program_module(program)
    _reset_flags()
    module.define_flags()
    out, err = io.StringIO(), io.StringIO()
    handler = logging.get_absl_handler().python_handler
    saved = (sys.argv, os.getcwd(), handler.stream, dict(os.environ))
    argv = [module.__file__, *flags]
    status = 0
    try:
        os.chdir(cwd)
        os.environ.update(env or {})
        sys.argv = argv
        handler.stream = err
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                remaining = programs.parse_flags(argv, doc=module.__doc__ or "")
                status = module.main(remaining) or 0
            except SystemExit as error:
                if isinstance(error.code, str):
                    print(error.code, file=sys.stderr)
                    status = 1
                else:
                    status = error.code or 0
    finally:
        sys.argv, cwd, handler.stream, environ = saved
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        _reset_flags()  # as after a process ends: the next program defines its flags
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def ok(result):
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def shared_once(tmp_path_factory, name, make):
    """`(directory, make(directory))`, made once per test run whichever xdist worker asks
    first (a lock file in the directory the workers share); the others wait and read it.
    `make` returns text (e.g. what a program printed), kept beside the directory."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    directory, printed = root / f"shared-{name}", root / f"shared-{name}.txt"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed.exists():
            text = make(directory)
            printed.write_text(text, encoding="utf-8")
        return directory, printed.read_text(encoding="utf-8")


def random_ids(rng, batch, length, vocab_size=SMALL["vocab_size"]):
    return rng.integers(2, vocab_size, size=(batch, length)).astype("int32")


def _numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def layer_arguments(layer_class, config=None, **arguments):
    """`arguments`, and each other argument `layer_class` takes that is a configuration
    field (the shared layers' own names for DSAN's fields included) from `config` (DSAN's
    paper values when None): the layers keep no defaults of their own, the
    configuration declares them once."""
    from dsan_tf.models.backbone import arguments_of
    from dsan_tf.models.dsan.config import DSANConfig

    config = config if config is not None else DSANConfig()
    values = dataclasses.asdict(config)
    if isinstance(config, DSANConfig):
        values.update(hidden_units=config.classifier_units,
                      input_dropout=config.classifier_input_dropout,
                      padding=config.max_pool_padding, output_norm=config.fusion_output_norm,
                      shared_norm=False, hidden_layer_norm=True, activation="relu",
                      prior=config.distance_prior, alpha=config.distance_alpha,
                      max_distance=config.prior_max_distance)
    return {**arguments_of(layer_class, values), **arguments}


def made(layer_class, *args, config=None, **arguments):
    """`layer_class(*args, ...)` with `layer_arguments`: `arguments`, the rest from the
    configuration."""
    return layer_class(*args, **layer_arguments(layer_class, config, **arguments))


def run_layer_test(layer_class, init_kwargs, inputs, call_kwargs=None,
                   expected_output_shape=None, float32_output=False, fit=True):
    """Checks a layer the way Keras users meet it, failing on the first broken property.

    1. Eager call: the output has `expected_output_shape`.
    2. Serialization: `from_config(get_config())` gives the same config, and with the same
       weights the same output; Keras' registry (what `.keras` files use) revives the class.
    3. Symbolic call inside a functional model: same output shape (batch dimension kept).
    4. `fit` of that model, XLA-compiled, for one step: a finite loss, and every trainable
       weight moves (a weight cut off from the loss would not).
    5. Mixed precision (`mixed_float16`, `mixed_bfloat16`): weights stay float32, the output
       is in the compute dtype (float32 where the layer promises it) and finite.

    Args:
        layer_class: the layer's class.
        init_kwargs: dict of constructor arguments.
        inputs: tuple of NumPy arrays, the positional call arguments.
        call_kwargs: dict of keyword call arguments; NumPy arrays become model inputs.
        expected_output_shape: tuple; a layer returning one tensor per sentence is checked
            on them stacked, [B, n, ...].
        float32_output: the layer returns float32 whatever the policy (e.g. logits).
        fit: run check 4 (layers without trainable weights skip it anyway).
    """
    call_kwargs = call_kwargs or {}
    layer = layer_class(**init_kwargs)
    output = _numpy(_joined(layer(*inputs, **call_kwargs)))
    assert output.shape == tuple(expected_output_shape), output.shape
    assert np.all(np.isfinite(output))

    config = layer.get_config()
    clone = layer_class.from_config(config)
    assert clone.get_config() == config
    clone(*inputs, **call_kwargs)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_numpy(_joined(clone(*inputs, **call_kwargs))), output,
                               atol=1e-5)
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(revived) is layer_class and revived.get_config() == config

    model, arrays = _functional(layer_class(**init_kwargs), inputs, call_kwargs)
    assert tuple(model.output.shape) == tuple(expected_output_shape)
    if fit and model.trainable_weights:
        _check_fit(model, arrays, output)

    for policy in ("mixed_float16", "mixed_bfloat16"):
        half = layer_class(**dict(init_kwargs, dtype=policy))
        result = _joined(half(*inputs, **call_kwargs))
        expected = "float32" if float32_output else policy.split("_")[1]
        assert keras.backend.standardize_dtype(result.dtype) == expected, (policy, result.dtype)
        assert all(w.dtype == "float32" for w in half.weights)
        assert np.all(np.isfinite(_numpy(result).astype("float32"))), policy


def _joined(output):
    """A layer's output; a tuple of equally shaped outputs (one per sentence) stacked on
    axis 1, [B, n, ...], so the battery checks every part."""
    if isinstance(output, (tuple, list)):
        return keras.ops.stack(list(output), axis=1)
    return output


def _functional(layer, inputs, call_kwargs):
    """A functional model calling `layer` on symbolic inputs of the arrays' exact shapes."""
    symbolic = [keras.Input(batch_shape=a.shape, dtype=str(a.dtype)) for a in inputs]
    symbolic_kwargs, arrays = {}, list(inputs)
    for name, value in call_kwargs.items():
        if isinstance(value, np.ndarray):
            symbolic_kwargs[name] = keras.Input(batch_shape=value.shape, dtype=str(value.dtype))
            arrays.append(value)
        else:
            symbolic_kwargs[name] = value
    output = _joined(layer(*symbolic, **symbolic_kwargs))
    model_inputs = symbolic + [v for v in symbolic_kwargs.values() if keras.KerasTensor
                               and isinstance(v, keras.KerasTensor)]
    return keras.Model(model_inputs, output), arrays


def _check_fit(model, arrays, output):
    # XLA on TensorFlow and JAX; torch.compile would spend minutes per layer.
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse",
                  jit_compile=keras.backend.backend() != "torch")
    before = [_numpy(w).copy() for w in model.trainable_weights]
    target = np.random.default_rng(0).normal(size=output.shape).astype("float32")
    history = model.fit(arrays, target, batch_size=len(target), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    unchanged = [w.path for w, old in zip(model.trainable_weights, before)
                 if np.array_equal(_numpy(w), old)]
    assert not unchanged, f"weights the loss does not reach: {unchanged}"


def inference(model, inputs):
    """`model(inputs, training=False)` as a NumPy array. On JAX, one compiled call of the
    model's stateless call: eager JAX compiles every op anew for each new shape, 4 to 5
    times slower at the tests' size (the Keras-only pass's CI time); elsewhere the eager
    call."""
    if keras.backend.backend() != "jax":
        return keras.ops.convert_to_numpy(model(inputs, training=False))
    if model not in _COMPILED:  # one program a model and shape, its weights passed in
        import jax

        held = weakref.ref(model)  # the entry must not keep its own key alive

        def call(trainable, others, inputs):
            return held().stateless_call(trainable, others, inputs, training=False)[0]

        _COMPILED[model] = jax.jit(call)
    return np.asarray(_COMPILED[model]([v.value for v in model.trainable_variables],
                                       [v.value for v in model.non_trainable_variables],
                                       inputs))


_COMPILED = weakref.WeakKeyDictionary()  # `inference`'s compiled calls, by model


RELOAD = """
import json, os, sys
if os.environ["KERAS_BACKEND"] != "tensorflow":
    sys.modules["tensorflow"] = None  # loading needs Keras only
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
import numpy as np
import dsan_tf.models
from helpers import inference  # as the test computed what it expects
inputs = dict(np.load(sys.argv[1]))
outputs = [inference(dsan_tf.models.registry.load_model(path), inputs).tolist()
           for path in sys.argv[2:]]  # load_model registers the classes first
print(json.dumps(outputs))
"""


def reloaded_outputs(model, inputs, directory):
    """The outputs of `model` saved as .keras and reloaded in a fresh Python process (only
    Keras' registry and dsan_tf.models there), for `inputs` (a dict of arrays)."""
    return reloaded_outputs_of([model], inputs, directory)[0]


def reloaded_outputs_of(models, inputs, directory):
    """`reloaded_outputs` of several models, reloaded in one fresh process."""
    paths, data = [directory / f"model{i}.keras" for i in range(len(models))], \
        directory / "inputs.npz"
    for model, path in zip(models, paths):
        model.save(path)
    np.savez(data, **inputs)
    result = subprocess.run([sys.executable, "-c", RELOAD, str(data), *map(str, paths)],
                            env=ENV, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return [np.array(output) for output in json.loads(result.stdout.strip().splitlines()[-1])]
