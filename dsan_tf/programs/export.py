"""Exports a trained run for serving.

    dsan-export --workdir=DIR --export_dir=DIR

The SavedModel goes to EXPORT_DIR/<version>/ (TF Serving's layout: --version, or one more than
the largest version already there), and needs TensorFlow only (not dsan_tf):
  - `serving_default`: premise, hypothesis (string [B]) -> probabilities [B, 3], label [B],
    label_names [3];
  - `encode` (sentence encoders: DSAN, DiSAN, CBOW; not a pair model such as the Gaussian
    Transformer): sentences (string [B]) -> embedding [B, E], the backbone's sentence vector.
Load it with `dsan_tf.load(EXPORT_DIR)` (the newest version), `tf.saved_model.load(
EXPORT_DIR/1)` or `keras.layers.TFSMLayer`, or serve it with TF Serving's model server
(docs/SERVING.md). Beside the SavedModel files, `model.keras`, `vocab.json` and `preprocessor.json`
hold the model and its `NLIPreprocessor` for Keras users.
"""

from absl import flags

from dsan_tf.common.errors import require_tensorflow_backend
from dsan_tf.core import rundir
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_run_workdir_flag()
    flags.DEFINE_string("export_dir", None, "TF Serving's model directory: the SavedModel "
                        "goes to EXPORT_DIR/<version>/.")
    project_flags.require_output_directory("export_dir")
    project_flags.refuse_other_runs("export_dir")
    flags.DEFINE_integer("version", None, "The export's version (default: one more than the "
                         "largest there).", lower_bound=1)
    flags.DEFINE_boolean("unfinished", False, "Export the best model so far of a run that "
                         "is still training, or was stopped before its end (refused "
                         "without it).")


@program.main(required={"workdir": program.RUN_DIRECTORY,
                        "export_dir": "where to write the SavedModel"})
def main(argv):
    require_tensorflow_backend("dsan-export")
    from dsan_tf.saving import export  # TensorFlow loads here, after --help

    target = export.export_runs([rundir.RunDirectory(FLAGS.workdir)], FLAGS.export_dir,
                                FLAGS.version, unfinished=FLAGS.unfinished)
    print(f"SavedModel, model.keras, the preprocessor and {rundir.CARD}: {target}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
