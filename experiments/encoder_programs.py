"""What a training step split by sentence would cost to compile (issue 48, the CPU's
compile-ahead goal): the backbone's forward pass (with what its backward pass keeps), its
backward pass and its inference pass, each compiled for one sentence length [B, T], as a
step of per-length programs would compile them (the head, loss and optimizer would be
programs of their own, compiled once). JAX only; TensorFlow is not needed.

    KERAS_BACKEND=jax python -m experiments.encoder_programs \\
        --setting=settings/snli25k_glove50.npz --lengths=12,18,24,43,82 --output=FILE

Each length's line: seconds to lower and to compile each program, HLO instructions after
optimisation, and milliseconds of a forward and backward pass of B sentences.
"""

import json
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("setting", None, "The encoded setting (.npz) whose model is measured.")
flags.DEFINE_list("lengths", ["12", "18", "24", "43", "82"], "Sentence lengths T.")
flags.DEFINE_integer("batch_size", 64, "Sentences a program reads, B.")
flags.DEFINE_string("output", None, "Also write the lines here (JSON lines).")


def _timed(function):
    started = time.perf_counter()
    result = function()
    return result, round(time.perf_counter() - started, 3)


def measure_length(backbone, ids, repeats=10):
    """{"T", "<program>_lower_s", "<program>_compile_s", "<program>_hlo", "forward_backward_ms"}
    for the programs "forward" (outputs and the vjp), "backward" and "inference"."""
    import jax
    import jax.numpy as jnp

    from experiments.program_size import count_instructions

    backbone(ids[:1])  # built: its variables all there
    trainable = [v.value for v in backbone.trainable_variables]
    others = [v.value for v in backbone.non_trainable_variables]

    def forward(trainable, others, ids):
        return jax.vjp(lambda t: backbone.stateless_call(t, others, ids, training=True),
                       trainable, has_aux=True)

    def inference(trainable, others, ids):
        return backbone.stateless_call(trainable, others, ids, training=False)[0]

    row, compiled = {"T": int(ids.shape[1])}, {}
    for name, function, args in (("forward", forward, (trainable, others, ids)),
                                 ("backward", lambda vjp, ct: vjp(ct), None),
                                 ("inference", inference, (trainable, others, ids))):
        if name == "backward":
            outputs, vjp, _ = compiled["forward"](trainable, others, ids)
            cotangent = jnp.ones_like(outputs)
            args = (vjp, cotangent)
        lowered, row[f"{name}_lower_s"] = _timed(lambda: jax.jit(function).lower(*args))
        compiled[name], row[f"{name}_compile_s"] = _timed(lowered.compile)
        row[f"{name}_hlo"] = count_instructions(compiled[name].as_text())
    step = lambda: jax.block_until_ready(  # noqa: E731
        compiled["backward"](compiled["forward"](trainable, others, ids)[1], cotangent))
    step()
    _, seconds = _timed(lambda: [step() for _ in range(repeats)])
    row["forward_backward_ms"] = round(seconds / repeats * 1000, 1)
    return row


def main(argv):
    del argv
    import keras
    import numpy as np

    from dsan_tf.experiment.task import NLITask
    from dsan_tf.training.setting import EncodedSetting

    setting = EncodedSetting.load(FLAGS.setting)
    keras.utils.set_random_seed(0)
    task = NLITask(setting.config, log=lambda *_: None)
    backbone = task.build_model(setting.vocabulary_size, setting.word_vectors).backbone
    rng = np.random.default_rng(0)
    for length in map(int, FLAGS.lengths):
        ids = rng.integers(2, setting.vocabulary_size, (FLAGS.batch_size, length))
        line = json.dumps(measure_length(backbone, ids.astype("int32")))
        print(line, flush=True)
        if FLAGS.output:
            with open(FLAGS.output, "a", encoding="utf-8") as stream:
                stream.write(line + "\n")


if __name__ == "__main__":
    flags.mark_flag_as_required("setting")
    app.run(main)
