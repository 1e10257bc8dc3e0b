"""Trains a model (DSAN, DiSAN or CBOW), keeps the best dev model, and can export it.

    python -m experiments.train --flagfile=experiments/configs/demo.cfg --workdir=/tmp/demo
    python -m experiments.train --flagfile=experiments/configs/dsan_snli.cfg --workdir=runs/dsan \
        --embeddings=glove.840B.300d.zip
    ... --strategy=mirrored          # every local GPU; --batch_size stays the global batch
    TF_CONFIG=... python -m experiments.train ... --strategy=multi_worker   # on each machine

Run again with the same flags after an interruption (even SIGKILL): training continues from
the last completed epoch. `tensorboard --logdir WORKDIR/tensorboard` shows the run.
"""

from absl import flags

from experiments import flags as project_flags
from experiments import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_model_flags()
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_workdir_flag()
    flags.DEFINE_integer("log_every_steps", 100,
                         "TensorBoard: log training metrics every N steps.")
    flags.DEFINE_enum("strategy", "default", ["default", "mirrored", "multi_worker", "tpu"],
                      "tf.distribute strategy: one device, all local GPUs, several machines "
                      "(TF_CONFIG) or a TPU; --batch_size is the global batch.")
    flags.DEFINE_string("tpu", "", "--strategy=tpu: the TPU's name or grpc:// address "
                        "(empty: the TPU of this VM).")
    flags.DEFINE_integer("logical_cpus", 0, "Split the CPU into this many logical devices, "
                         "so that --strategy=mirrored runs without GPUs (trying it, tests).")
    flags.DEFINE_string("export_dir", None, "Export the best model as a SavedModel in "
                        "EXPORT_DIR/<next version>/ (TF Serving's layout).")
    flags.DEFINE_string("probe_sentence", None, "Log the analysis figures of this sentence "
                        "to TensorBoard at every epoch end (--model=dsan).")


@program.main
def main(argv):
    program.check_start(argv, workdir="the run directory",
                        train_data="the training data (see --helpfull)",
                        dev_data="the development data (see --helpfull)",
                        embeddings="a GloVe file, glove:840B.300d or random")
    if FLAGS.probe_sentence and FLAGS.model != "dsan":
        raise program.UsageError("--probe_sentence needs --model=dsan (the figures show "
                                 "attention).")
    from dsan_tf import data  # TensorFlow loads here, not for --help
    from dsan_tf.task import NLITask
    from experiments import distribute, training
    from experiments.rundir import FLAGFILE, RunDirectory

    config = project_flags.experiment_config()
    strategy = training.set_up(config, FLAGS.strategy, FLAGS.tpu, FLAGS.logical_cpus)
    multi_worker = FLAGS.strategy == "multi_worker"
    run = RunDirectory(distribute.worker_dir(FLAGS.workdir) if multi_worker else FLAGS.workdir,
                       create=True)
    task = NLITask(config)
    prepared = training.prepare_data(task, run)
    with open(run.path(FLAGFILE), "w") as stream:  # resolved, so that it repeats the run
        resolved = {"trainable_embeddings": config.model_config.trainable_embeddings}
        stream.write("\n".join(project_flags.flagfile_lines(**resolved)) + "\n")
    inputs = {split: task.build_inputs(pairs, training=split == "train",
                                       static_shapes=FLAGS.strategy == "tpu")
              for split, pairs in prepared.encoded.items()}
    padding = data.padding_fraction(inputs["train"])
    print(f"vocabulary: {prepared.preprocessor.vocabulary_size:,} ids; training batches hold "
          f"{padding:.1%} padding")
    model = training.build(task, strategy, prepared)
    training.write_config(run, task, prepared, model, strategy, padding, FLAGS.strategy)
    shared, nan_guard = training.make_callbacks(run, task, prepared, FLAGS.log_every_steps,
                                                FLAGS.probe_sentence)
    training.fit(model, strategy, FLAGS.strategy, inputs, shared, run, config.training.epochs)
    results = training.finish(run, model, inputs, nan_guard, FLAGS.export_dir,
                              prepared.preprocessor)
    test = f", test accuracy {results['test_accuracy']:.4f}" if "test_accuracy" in results else ""
    print(f"dev accuracy {results['dev_accuracy']:.4f} (best epoch {results['best_epoch']})"
          f"{test}; model: {run.path('best.keras')}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
