"""How AF-DMN's starting weights decide whether its deep layers can learn: the signal after
the encoder and each computational block, and the mean |gradient| of the loss with respect
to each group of weights, at initialisation, for each `--initialization` and size.

    python -m experiments.afdmn_init [--output=records/runs/afdmn_init_scales.json]

Adam's step on a weight is about lr·g/(|g| + ε) (ε = 1e-7 in Keras): a gradient far below ε
barely moves its weight, whatever the learning rate. docs/FIDELITY.md (#afdmn-initialisation
and #afdmn-initialisation-at-study-size) quotes the numbers; `tests/test_afdmn.py` checks
the same measurement.
"""

import json

import keras
import numpy as np
from absl import flags

from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS
ADAM_EPSILON = keras.optimizers.Adam().epsilon
# The study's size (d_e 50 from GloVe 6B 50d, h 100) and the paper's (Section 5.2: 300).
SIZES = ((50, 100), (300, 300))
# GloVe 6B 50d's entries have a standard deviation of 0.69 (top 20k words); 0.5 sits between
# it and the 300-d files'.
WORD_VECTOR_SCALE = 0.5


def define_flags():
    flags.DEFINE_string("output", "records/runs/afdmn_init_scales.json", "The measurements.")
    flags.DEFINE_integer("batch_size", 32, "Pairs in the measured batch.", lower_bound=1)


def measure(initialization, embedding_dim, units, blocks=3, batch_size=32, seed=0):
    """Signal and gradient scales of a freshly built AF-DMN on one random batch (14-token
    premises, 8-token hypotheses, random labels), in inference mode (no dropout).

    Returns:
        {"signal": mean |state| after the encoder and after each block (premise side),
         "gradient": {"encoder_kernels", "deepest_block_kernels", "head_kernels",
                      "head_biases": mean |dloss/dw| of the group},
         "adam_step": Adam's first step on the deepest block's kernels as a fraction of the
                      learning rate, mean of |g| / (|g| + ε)}.
    """
    import tensorflow as tf

    from dsan_tf import build_model, model_config
    from dsan_tf.layers import masks

    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    vocabulary = 500
    vectors = rng.normal(0.0, WORD_VECTOR_SCALE, (vocabulary, embedding_dim)).astype("float32")
    config = model_config("afdmn", embedding_dim=embedding_dim, lstm_units=units,
                          matching_blocks=blocks, initialization=initialization)
    model = build_model("afdmn", config, vectors)
    inputs = {"premise": rng.integers(2, vocabulary, (batch_size, 14)).astype("int32"),
              "hypothesis": rng.integers(2, vocabulary, (batch_size, 8)).astype("int32")}
    labels = rng.integers(0, 3, batch_size)
    with tf.GradientTape() as tape:
        loss = keras.ops.mean(keras.losses.sparse_categorical_crossentropy(
            labels, model(inputs, training=False), from_logits=True))
    gradients = {id(w): np.abs(np.asarray(tf.convert_to_tensor(g)))  # embeddings: sparse
                 for w, g in zip(model.trainable_weights,
                                 tape.gradient(loss, model.trainable_weights))}
    backbone = model.backbone
    kernels = lambda layer: [w for w in layer.trainable_weights  # noqa: E731
                             if not w.path.endswith("bias")]
    head = [w for w in model.trainable_weights if w.path.startswith("classification_head/")]
    groups = {"encoder_kernels": kernels(backbone.encoder),
              "deepest_block_kernels": kernels(backbone.blocks[-1]),
              "head_kernels": [w for w in head if w.path.endswith("kernel")],
              "head_biases": [w for w in head if w.path.endswith("bias")]}
    flat = {name: np.concatenate([gradients[id(w)].ravel() for w in weights])
            for name, weights in groups.items()}
    return {"signal": _signal(backbone, inputs, masks.padding_mask),
            "gradient": {name: float(values.mean()) for name, values in flat.items()},
            "adam_step": float(np.mean(flat["deepest_block_kernels"]
                                       / (flat["deepest_block_kernels"] + ADAM_EPSILON)))}


def _signal(backbone, inputs, padding_mask):
    """Mean |premise state| after the encoder and after each block."""
    real = {side: padding_mask(ids) for side, ids in inputs.items()}
    states = {side: backbone.encoder(backbone.token_embedding(inputs[side]), mask=real[side])
              for side in inputs}
    scales = [float(np.abs(np.asarray(states["premise"])).mean())]
    for block in backbone.blocks:
        states["premise"], states["hypothesis"] = block(
            states["premise"], states["hypothesis"], real["premise"], real["hypothesis"])
        scales.append(float(np.abs(np.asarray(states["premise"])).mean()))
    return scales


@program.main
def main(argv):
    from dsan_tf.models.afdmn.config import INITIALIZATIONS

    program.check_start(argv)
    results = {}
    for embedding_dim, units in SIZES:
        for initialization in INITIALIZATIONS:
            found = measure(initialization, embedding_dim, units, batch_size=FLAGS.batch_size)
            results[f"{initialization} d_e={embedding_dim} h={units}"] = found
            gradient = found["gradient"]
            print(f"{initialization:8s} d_e {embedding_dim:3d} h {units:3d}: signal "
                  + " -> ".join(f"{s:.1e}" for s in found["signal"])
                  + "; |grad| encoder {encoder_kernels:.1e}, deepest block "
                  "{deepest_block_kernels:.1e}, head kernels {head_kernels:.1e}, head biases "
                  "{head_biases:.1e}".format(**gradient)
                  + f"; Adam step {found['adam_step']:.1e} of the rate", flush=True)
    with open(FLAGS.output, "w", encoding="utf-8") as stream:
        json.dump({"command": "python -m experiments.afdmn_init", "adam_epsilon": ADAM_EPSILON,
                   "batch_size": FLAGS.batch_size, "results": results}, stream, indent=1)
    print(f"wrote {FLAGS.output}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
