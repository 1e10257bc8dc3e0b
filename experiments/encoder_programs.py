"""What the per-length programs of a training step cost to compile (issue 48, the CPU's
compile-ahead goal; `dsan_tf.models.sentence_programs`): the encoder's training pass (with
what its backward pass keeps), its backward pass and its inference pass, each compiled for
one sentence length [B, T]. JAX only; TensorFlow is not needed.

    KERAS_BACKEND=jax python -m experiments.encoder_programs \\
        --setting=settings/snli25k_glove50.npz --lengths=12,18,24,43,82 --output=FILE

Each length's line: seconds to lower and to compile each program, HLO instructions after
optimisation, and milliseconds of a forward and backward pass of B sentences.
`--compare_shape=12x18` also runs one training step of that shape both ways from the same
start (`train_on_batch` with per-length programs and with Keras' whole step): its first
call (the compiles), its milliseconds, and the largest difference between the two steps'
weights.
"""

import dataclasses
import json
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("setting", None, "The encoded setting (.npz) whose model is measured.")
flags.DEFINE_list("lengths", ["12", "18", "24", "43", "82"], "Sentence lengths T.")
flags.DEFINE_integer("batch_size", 64, "Sentences a program reads, B.")
flags.DEFINE_string("output", None, "Also write the lines here (JSON lines).")
flags.DEFINE_string("compare_shape", None, "T1xT2: a training step of per-length programs "
                    "against Keras' whole step, on a batch of that shape.")


def _timed(function):
    started = time.perf_counter()
    result = function()
    return result, round(time.perf_counter() - started, 3)


def measure_length(model, ids, repeats=10):
    """{"T", "<program>_lower_s", "<program>_compile_s", "<program>_hlo", "forward_backward_ms"}
    for the per-length programs of `model` (`dsan_tf.models.sentence_programs`: "forward",
    its encoder's training pass with what its backward pass keeps, "backward" and
    "inference") at the length of `ids` (HLO after optimisation)."""
    import jax
    import jax.numpy as jnp

    from dsan_tf.models.sentence_programs import SentencePrograms
    from experiments.program_size import lower_and_compile

    model.backbone(ids[:1])  # built: its variables all there
    weights = ([v.value for v in model.backbone.trainable_variables],
               [v.value for v in model.backbone.non_trainable_variables])
    programs = SentencePrograms(model)
    functions = {"forward": programs.encode, "backward": programs.backward,
                 "inference": programs.inference}
    row, compiled = {"T": int(ids.shape[1])}, {}

    def compile_one(name, *args):
        compiled[name], sizes = lower_and_compile(functions[name], *args)
        row.update({f"{name}_lower_s": sizes["lower_seconds"],
                    f"{name}_compile_s": sizes["compile_seconds"],
                    f"{name}_hlo": sizes["hlo_after_optimisation"]})

    compile_one("forward", *weights, ids)
    outputs, vjp, _ = compiled["forward"](*weights, ids)
    cotangent = jnp.ones_like(outputs)
    compile_one("backward", vjp, cotangent)
    compile_one("inference", *weights, ids)
    step = lambda: jax.block_until_ready(  # noqa: E731
        compiled["backward"](compiled["forward"](*weights, ids)[1], cotangent))
    step()
    _, seconds = _timed(lambda: [step() for _ in range(repeats)])
    row["forward_backward_ms"] = round(seconds / repeats * 1000, 1)
    return row


def compare_steps(make_model, x, y, weight=None, repeats=20):
    """{"split_first_s", "split_ms", "whole_first_s", "whole_ms", "weights_max_difference"}:
    one training step (`train_on_batch`) of the models `make_model(sentence_programs)`
    makes alike, with per-length programs ("split") and Keras' whole step: the first call
    (its compiles), then the milliseconds of a step."""
    import numpy as np

    row, weights = {}, {}
    for name, programs in (("split", True), ("whole", False)):
        model = make_model(programs)
        _, row[f"{name}_first_s"] = _timed(
            lambda: model.train_on_batch(x, y, sample_weight=weight))
        weights[name] = [np.asarray(v) for v in model.trainable_variables]
        _, seconds = _timed(lambda: [model.train_on_batch(x, y, sample_weight=weight)
                                     for _ in range(repeats)])
        row[f"{name}_ms"] = round(seconds / repeats * 1000, 1)
    row["weights_max_difference"] = float(max(np.max(np.abs(a - b)) for a, b in
                                              zip(weights["split"], weights["whole"])))
    return row


def main(argv):
    del argv
    import keras
    import numpy as np

    from dsan_tf.experiment.task import NLITask
    from dsan_tf.training.setting import EncodedSetting

    setting = EncodedSetting.load(FLAGS.setting)

    def make_model(programs):
        keras.utils.set_random_seed(0)
        config = dataclasses.replace(setting.config, training=dataclasses.replace(
            setting.config.training, sentence_programs=programs))
        task = NLITask(config, log=lambda *_: None)
        return task.compile(task.build_model(setting.vocabulary_size, setting.word_vectors),
                            train_size=len(setting.splits["train"]))

    model = make_model(True)
    rng = np.random.default_rng(0)
    ids = lambda length: rng.integers(  # noqa: E731
        2, setting.vocabulary_size, (FLAGS.batch_size, length)).astype("int32")
    rows = [measure_length(model, ids(length)) for length in map(int, FLAGS.lengths)]
    if FLAGS.compare_shape:
        x = {side: ids(int(length)) for side, length in zip(
            ("premise", "hypothesis"), FLAGS.compare_shape.split("x"))}
        for side in x:  # each sentence 1 to T tokens long, padded
            x[side][np.arange(x[side].shape[1]) >= rng.integers(
                1, x[side].shape[1] + 1, (FLAGS.batch_size, 1))] = 0
        rows.append({"shape": FLAGS.compare_shape, **compare_steps(
            make_model, x, rng.integers(0, 3, FLAGS.batch_size))})
    for row in rows:
        line = json.dumps(row)
        print(line, flush=True)
        if FLAGS.output:
            with open(FLAGS.output, "a", encoding="utf-8") as stream:
                stream.write(line + "\n")


if __name__ == "__main__":
    flags.mark_flag_as_required("setting")
    app.run(main)
