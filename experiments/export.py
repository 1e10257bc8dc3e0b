"""Exports a trained run for serving.

    python -m experiments.export --workdir=DIR --export_dir=DIR

EXPORT_DIR is a SavedModel that needs TensorFlow only (not dsan_tf):
  - `serving_default`: premise, hypothesis (string [B]) -> probabilities [B, 3], label [B],
    label_names [3];
  - `encode`: sentences (string [B]) -> embedding [B, 4·d_e], the sentence encoder's vector.
Load it with `tf.saved_model.load(EXPORT_DIR)` or `keras.layers.TFSMLayer`. Beside the
SavedModel files, `model.keras` and `vocab.json` hold the model for Keras users.
"""

import os
import shutil

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS


def main(argv):
    run.start(argv, export_dir="where to write the SavedModel")
    from dsan_tf.serving import TextPairClassifier

    model, vocab, config = run.load_run()
    TextPairClassifier(model, vocab, config["max_length"]).export(FLAGS.export_dir)
    shutil.copy(run.path(run.BEST), os.path.join(FLAGS.export_dir, "model.keras"))
    shutil.copy(run.path(run.VOCAB), os.path.join(FLAGS.export_dir, "vocab.json"))
    print(f"SavedModel (signatures serving_default, encode) and model.keras: {FLAGS.export_dir}")


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
