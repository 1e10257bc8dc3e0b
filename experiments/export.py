"""Exports a trained run for serving.

    python -m experiments.export --workdir=DIR --export_dir=DIR

EXPORT_DIR is a SavedModel that needs TensorFlow only (not dsan_tf):
  - `serving_default`: premise, hypothesis (string [B]) -> probabilities [B, 3], label [B],
    label_names [3];
  - `encode` (sentence encoders: DSAN, DiSAN, CBOW; not a pair model such as the Gaussian
    Transformer): sentences (string [B]) -> embedding [B, E], the backbone's sentence vector.
Load it with `tf.saved_model.load(EXPORT_DIR)` or `keras.layers.TFSMLayer`. Beside the
SavedModel files, `model.keras`, `vocab.json` and `preprocessor.json` hold the model and
its `NLIPreprocessor` for Keras users (`NLIPreprocessor.load(EXPORT_DIR)`).
"""

import os
import shutil

from absl import flags

from experiments import flags as project_flags
from experiments import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_workdir_flag()
    flags.DEFINE_string("export_dir", None, "Where to write the SavedModel.")


@program.main
def main(argv):
    program.check_start(argv, export_dir="where to write the SavedModel")
    from dsan_tf.serving import Predictor  # TensorFlow loads here, not for --help
    from experiments.rundir import BEST, RunDirectory

    run = RunDirectory(FLAGS.workdir)
    model, preprocessor, _ = run.load()
    Predictor(model, preprocessor).export(FLAGS.export_dir)
    shutil.copy(run.path(BEST), os.path.join(FLAGS.export_dir, "model.keras"))
    preprocessor.save(FLAGS.export_dir)
    print(f"SavedModel and model.keras: {FLAGS.export_dir}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
