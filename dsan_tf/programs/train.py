r"""Trains a model of any family (--model), keeps the best dev model, and can export it.

    python -m experiments.train --flagfile=experiments/configs/demo.cfg --workdir=/tmp/demo
    python -m experiments.train --flagfile=experiments/configs/dsan_snli.cfg --workdir=runs/dsan \
        --embeddings=glove.840B.300d.zip
    ... --strategy=mirrored          # every local GPU; --batch_size stays the global batch
    TF_CONFIG=... python -m experiments.train ... --strategy=multi_worker   # on each machine

Run again with the same flags after an interruption (even SIGKILL): training continues from
the last completed epoch; a finished run is reported, not trained again. Other flags on an
existing run directory are refused (--overwrite starts it afresh), so that its records always
describe its model. `tensorboard --logdir WORKDIR/tensorboard` shows the run.
"""


from absl import flags

from dsan_tf.config import RunOptions
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_model_flags()
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_workdir_flag()
    project_flags.define_compilation_flags()
    flags.DEFINE_integer("log_every_steps", 100,
                         "TensorBoard: log training metrics every N steps.",
                         lower_bound=1)
    flags.DEFINE_enum("strategy", "default", ["default", "mirrored", "multi_worker", "tpu"],
                      "tf.distribute strategy: one device, all local GPUs, several machines "
                      "(TF_CONFIG) or a TPU; --batch_size is the global batch.")
    flags.DEFINE_string("tpu", "", "--strategy=tpu: the TPU's name or grpc:// address "
                        "(empty: the TPU of this VM).")
    flags.DEFINE_integer("logical_cpus", 0, "Split the CPU into this many logical devices, "
                         "so that --strategy=mirrored runs without GPUs (trying it, tests).",
                         lower_bound=0)
    flags.DEFINE_string("export_dir", None, "Export the best model as a SavedModel in "
                        "EXPORT_DIR/<next version>/ (TF Serving's layout).")
    flags.DEFINE_boolean("overwrite", False, "Replace what an earlier run left in --workdir "
                         "(its files only) and train afresh; without it, a --workdir holding "
                         "a run of other flags is refused.")
    flags.DEFINE_string("probe_sentence", None, "Log the analysis figures of this sentence "
                        "to TensorBoard at every epoch end (models that show a sentence's attention: "
                        "dsan).")


def run_options(values=FLAGS):
    """The `RunOptions` of this program's own flags (how to run; the model, data and
    optimisation are the `ExperimentConfig`)."""
    return RunOptions(strategy=values.strategy, tpu=values.tpu,
                      logical_cpus=values.logical_cpus, log_every_steps=values.log_every_steps,
                      probe_sentence=values.probe_sentence, export_dir=values.export_dir,
                      compile_ahead=values.compile_ahead,
                      compilation_cache=values.compilation_cache)


@program.main
def main(argv):
    program.check_start(argv, workdir="the run directory",
                        train_data="the training data (see --helpfull)",
                        dev_data="the development data (see --helpfull)",
                        embeddings="a GloVe file, glove:840B.300d or random")
    if FLAGS.export_dir:
        program.require_tensorflow_backend("--export_dir")
    # Flags are read here, once; the library gets them as two objects.
    config, options = project_flags.experiment_config(), run_options()
    # Resolved, so that flags.txt repeats the run; --overwrite is a way of starting it.
    lines = project_flags.flagfile_lines(
        exclude=("overwrite", "compile_ahead", "compilation_cache"),
        jit_compile=config.training.jit_compile, bounded_shapes=config.data.bounded_shapes,
        trainable_embeddings=config.model_config.trainable_embeddings)
    from dsan_tf.training import steps  # TensorFlow loads here, after --help

    try:
        outcome = steps.train_run(FLAGS.workdir, config, options, lines, FLAGS.overwrite)
    except KeyboardInterrupt:
        raise program.Interrupted(steps.interrupted_message(
            FLAGS.workdir, program.command_line())) from None
    if outcome.state == "finished":
        print(f"{outcome.workdir} is a finished run of these flags: nothing trained (add "
              "--overwrite to train it again).")
    print(outcome.summary())


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
