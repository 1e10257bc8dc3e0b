"""What a training step split by sentence would cost to compile (issue 48, the CPU's
compile-ahead goal): the backbone's forward pass (with what its backward pass keeps), its
backward pass and its inference pass, each compiled for one sentence length [B, T], as a
step of per-length programs would compile them (the head, loss and optimizer would be
programs of their own, compiled once). JAX only; TensorFlow is not needed.

    KERAS_BACKEND=jax python -m experiments.encoder_programs \\
        --setting=settings/snli25k_glove50.npz --lengths=12,18,24,43,82 --output=FILE

Each length's line: seconds to lower and to compile each program, HLO instructions after
optimisation, and milliseconds of a forward and backward pass of B sentences.
`--compare_shape=12x18` also runs one training step of that shape both ways from the same
state (`split_step`: the backbone's programs for each side's length, the head's gradient,
the optimizer's update; and Keras' whole step): its first call (the compiles), its
milliseconds, and the largest difference between the two steps' weights.
"""

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


def backbone_programs(backbone):
    """The backbone's three functions of (trainable, non-trainable, ids [B, T]), to be
    compiled per length: "forward" -> (outputs, vjp, non-trainable after: dropout's seeds),
    "backward" (vjp, cotangent) -> the trainable variables' gradients, and "inference"."""
    import jax

    def forward(trainable, others, ids):
        return jax.vjp(lambda t: backbone.stateless_call(t, others, ids, training=True),
                       trainable, has_aux=True)

    def inference(trainable, others, ids):
        return backbone.stateless_call(trainable, others, ids, training=False)[0]

    return {"forward": forward, "backward": lambda vjp, cotangent: vjp(cotangent)[0],
            "inference": inference}


def measure_length(backbone, ids, repeats=10):
    """{"T", "<program>_lower_s", "<program>_compile_s", "<program>_hlo", "forward_backward_ms"}
    for the programs of `backbone_programs` at the length of `ids` (HLO after optimisation)."""
    import jax
    import jax.numpy as jnp

    from experiments.program_size import lower_and_compile

    backbone(ids[:1])  # built: its variables all there
    weights = ([v.value for v in backbone.trainable_variables],
               [v.value for v in backbone.non_trainable_variables])
    functions, row, compiled = backbone_programs(backbone), {"T": int(ids.shape[1])}, {}

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


def split_step(model):
    """A training step of `model` (an `NLIClassifier` that calls its backbone on each side)
    as separate programs: `step(state, x, y, sample_weight) -> (state, loss)`, with state
    (trainable, backbone non-trainable, head non-trainable, optimizer variables) as lists of
    arrays; dropout's seeds are threaded premise, hypothesis, head, as the model calls them."""
    import jax

    backbone, head = model.backbone, model.head
    matching, loss_of = model.get_layer("matching_features"), model.loss
    position = {id(v): i for i, v in enumerate(model.trainable_variables)}
    sides = ([position[id(v)] for v in backbone.trainable_variables],
             [position[id(v)] for v in head.trainable_variables])

    functions = backbone_programs(backbone)
    forward, backward = jax.jit(functions["forward"]), jax.jit(functions["backward"])

    @jax.jit
    def head_gradient(t, others, u, v, y, weight):
        def loss(t, u, v):
            logits, others_after = head.stateless_call(t, others, matching(u, v), training=True)
            return loss_of(y, logits, sample_weight=weight), others_after
        return jax.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True)(t, u, v)

    update = jax.jit(model.optimizer.stateless_apply)

    def step(state, x, y, weight=None):
        trainable, backbone_others, head_others, optimizer = state
        encoder = [trainable[i] for i in sides[0]]
        u, premise_vjp, backbone_others = forward(encoder, backbone_others, x["premise"])
        v, hypothesis_vjp, backbone_others = forward(encoder, backbone_others, x["hypothesis"])
        (loss, head_others), (head_grads, u_grad, v_grad) = head_gradient(
            [trainable[i] for i in sides[1]], head_others, u, v, y, weight)
        grads = [None] * len(trainable)
        for i, premise, hypothesis in zip(sides[0], backward(premise_vjp, u_grad),
                                          backward(hypothesis_vjp, v_grad)):
            grads[i] = premise + hypothesis
        for i, grad in zip(sides[1], head_grads):
            grads[i] = grad
        trainable, optimizer = update(optimizer, grads, trainable)
        return (trainable, backbone_others, head_others, optimizer), loss

    return step


def compare_steps(model, x, y, weight=None, repeats=20):
    """{"split_first_s", "split_ms", "whole_first_s", "whole_ms", "weights_max_difference"}:
    `split_step` and Keras' whole step (`train_on_batch`) on one batch from the same state."""
    import jax
    import numpy as np

    model.optimizer.build(model.trainable_variables)
    values = lambda variables: [v.value for v in variables]  # noqa: E731
    state = (values(model.trainable_variables), values(model.backbone.non_trainable_variables),
             values(model.head.non_trainable_variables), values(model.optimizer.variables))
    step, row = split_step(model), {}
    first, row["split_first_s"] = _timed(lambda: jax.block_until_ready(step(state, x, y, weight)))
    _, row["whole_first_s"] = _timed(  # the whole step's first call, from `state` too
        lambda: model.train_on_batch(x, y, sample_weight=weight))
    whole = [np.asarray(v) for v in model.trainable_variables]
    row["weights_max_difference"] = float(max(np.max(np.abs(np.asarray(a) - b))
                                              for a, b in zip(first[0][0], whole)))
    state = first[0]
    for name, run in (("split", lambda: jax.block_until_ready(step(state, x, y, weight))),
                      ("whole", lambda: model.train_on_batch(x, y, sample_weight=weight))):
        run()
        _, seconds = _timed(lambda: [run() for _ in range(repeats)])
        row[f"{name}_ms"] = round(seconds / repeats * 1000, 1)
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
    model = task.compile(task.build_model(setting.vocabulary_size, setting.word_vectors),
                         train_size=len(setting.splits["train"]))
    rng = np.random.default_rng(0)
    ids = lambda length: rng.integers(  # noqa: E731
        2, setting.vocabulary_size, (FLAGS.batch_size, length)).astype("int32")
    rows = [measure_length(model.backbone, ids(length)) for length in map(int, FLAGS.lengths)]
    if FLAGS.compare_shape:
        x = {side: ids(int(length)) for side, length in zip(
            ("premise", "hypothesis"), FLAGS.compare_shape.split("x"))}
        for side in x:  # each sentence 1 to T tokens long, padded
            x[side][np.arange(x[side].shape[1]) >= rng.integers(
                1, x[side].shape[1] + 1, (FLAGS.batch_size, 1))] = 0
        rows.append({"shape": FLAGS.compare_shape, **compare_steps(
            model, x, rng.integers(0, 3, FLAGS.batch_size))})
    for row in rows:
        line = json.dumps(row)
        print(line, flush=True)
        if FLAGS.output:
            with open(FLAGS.output, "a", encoding="utf-8") as stream:
                stream.write(line + "\n")


if __name__ == "__main__":
    flags.mark_flag_as_required("setting")
    app.run(main)
