r"""Trains a model of any family (--model), keeps the best dev model, and can export it.

    dsan-train --config=demo --workdir=/tmp/demo
    dsan-train --config=dsan_snli --workdir=runs/dsan \
        --embeddings=glove.840B.300d.zip

    dsan-train --config=demo --workdir=/tmp/demo      # the same, by name
    dsan-train --config=snli25k_glove50 --model=afdmn --workdir=runs/afdmn  # flags on top
    KERAS_BACKEND=jax dsan-train --setting=snli25k_glove50.npz --workdir=runs/jax
        # an encoded setting (dsan-encode-setting): no TensorFlow needed

Run again with the same configuration after an interruption (even SIGKILL): training
continues from the last completed epoch; a finished run is reported, not trained again, and
a higher --epochs trains it on. Another configuration on an existing run directory is
refused, naming each differing flag (--overwrite starts it afresh), so that its records
always describe its model. `tensorboard --logdir WORKDIR/tensorboard` shows the run.
"""


from absl import flags

from dsan_tf.common.errors import require_tensorflow_backend
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    """The flags of train (defined once: a test may call this again)."""
    if "overwrite" in FLAGS:
        return
    project_flags.define_experiment_flags()
    project_flags.require_output_directory("export_dir")
    project_flags.refuse_other_runs("export_dir")
    flags.DEFINE_string("setting", None, "Train on this encoded setting (.npz, written by "
                        "dsan-encode-setting) instead of reading data files: its "
                        "configuration, token ids and word vectors, with flags given on "
                        "top; needs no TensorFlow.")
    project_flags.require_existing("setting")
    project_flags.TOPIC_OF["setting"] = "data"
    flags.DEFINE_boolean("overwrite", False, "Replace what an earlier run left in --workdir "
                         "(its files only) and train afresh; without it, a --workdir holding "
                         "a run of another configuration is refused.")


@program.main(tensorflow=False, required={"workdir": "the run directory"})
def main(argv):
    if FLAGS.setting and FLAGS.config:
        raise program.UsageError("give --config or --setting, not both: an encoded setting "
                                 "holds its configuration.")
    setting = _setting() if FLAGS.setting else None
    if setting is None:
        config, policy = project_flags.experiment_config(), project_flags.run_policy()
        project_flags.check_config_paths(config.data, config.training, policy)
        for name, what in (("train_data", "the training data (see --helpfull)"),
                           ("dev_data", "the development data (see --helpfull)"),
                           ("embeddings", "a GloVe file, glove:840B.300d or random")):
            if not getattr(config.data, name):
                raise program.UsageError(f"give --{name}, {what}, or a --config.")
        program.load_tensorflow()  # it reads the text, on every backend
    else:  # the setting's data paths are those of the machine that encoded it
        config = project_flags.experiment_config(base=setting.config)
        policy = project_flags.run_policy(base=setting.policy)
        project_flags.check_config_paths(config.training, policy)
    outputs = project_flags.run_outputs()
    if outputs.export_dir:
        require_tensorflow_backend("export_dir")
    from dsan_tf.core.task import NLITask  # Keras loads here, after --help
    from dsan_tf.training import driver

    # The library gets the flags as objects, read here once: the task (what is trained and
    # how its steps run, as TF Model Garden's programs make it) for the driver to run.
    task = NLITask(config, policy)
    try:
        driver.train_run(FLAGS.workdir, task, overwrite=FLAGS.overwrite, setting=setting,
                         outputs=outputs, stop_after_epochs=FLAGS.stop_after_epochs)
    except KeyboardInterrupt:
        raise program.Interrupted(driver.interrupted_message(
            FLAGS.workdir, program.command_line())) from None
    except OSError as error:  # a full disk, a read-only folder
        program.fail(program.system_fault(error, driver.interrupted_message(
            FLAGS.workdir, program.command_line()).rstrip(".")))


def _setting():
    """The `EncodedSetting` of --setting; a file that is none is one sentence."""
    from dsan_tf.training.setting import EncodedSetting

    try:
        return EncodedSetting.load(FLAGS.setting)
    except (OSError, ValueError) as error:
        raise program.UsageError(f"--setting={FLAGS.setting}: {error}") from None


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
