"""Trains a model (DSAN, DiSAN or CBOW), keeps the best dev model, and can export it.

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

import os

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


def finished_line(results, model_path):
    """The line a run ends with (scripts read it): dev (and test) accuracy, best epoch."""
    test = (f", test accuracy {results['test_accuracy']:.4f}" if "test_accuracy" in results
            else "")
    return (f"dev accuracy {results['dev_accuracy']:.4f} (best epoch {results['best_epoch']})"
            f"{test}; model: {model_path}")


@program.main
def main(argv):
    program.check_start(argv, workdir="the run directory",
                        train_data="the training data (see --helpfull)",
                        dev_data="the development data (see --helpfull)",
                        embeddings="a GloVe file, glove:840B.300d or random")
    if FLAGS.probe_sentence:
        from dsan_tf.models import registry

        showing = [name for name in registry.names() if registry.family(name).sentence_figures]
        if FLAGS.model not in showing:
            raise program.UsageError(f"--probe_sentence needs --model={'|'.join(showing)} "
                                     "(the figures show one sentence's attention).")
    from experiments import distribute
    from experiments.rundir import BEST, HISTORY, RESULTS, RunDirectory

    if FLAGS.export_dir:
        program.require_tensorflow_backend("--export_dir")
    config = project_flags.experiment_config()
    # Resolved, so that flags.txt repeats the run; --overwrite is a way of starting it.
    lines = project_flags.flagfile_lines(
        exclude=("overwrite",), jit_compile=config.training.jit_compile,
        trainable_embeddings=config.model_config.trainable_embeddings)
    workdir = (distribute.worker_dir(FLAGS.workdir) if FLAGS.strategy == "multi_worker"
               else FLAGS.workdir)
    created = not os.path.isdir(workdir)
    run = RunDirectory(workdir)
    state = run.claim(lines, overwrite=FLAGS.overwrite)
    if state == "finished":
        print(f"{workdir} is a finished run of these flags: nothing trained (add --overwrite "
              "to train it again).")
        print(finished_line(run.read_json(RESULTS), run.path(BEST)))
        return
    try:
        results = train(config, run)
    except BaseException:
        if state == "new" and not run.exists(HISTORY):  # no epoch finished: nothing to keep
            run.discard(remove_directory=created)
        raise
    print(finished_line(results, run.path(BEST)))


def train(config, run):
    """Trains the run `config` describes in the claimed run directory `run`; returns the
    results dict that results.json holds."""
    from dsan_tf import data
    from dsan_tf.task import NLITask
    from experiments import training

    strategy = training.set_up(config, FLAGS.strategy, FLAGS.tpu, FLAGS.logical_cpus)
    task = NLITask(config)
    prepared = training.prepare_data(task, run)
    inputs = {split: task.build_inputs(pairs, training=split == "train",
                                       static_shapes=FLAGS.strategy == "tpu")
              for split, pairs in prepared.encoded.items()}
    padding = data.padding_fraction(inputs["train"])
    print(f"vocabulary: {prepared.preprocessor.vocabulary_size:,} ids; training batches hold "
          f"{padding:.1%} padding")
    model = training.build(task, strategy, prepared)
    training.write_config(run, task, prepared, model, strategy, padding, FLAGS.strategy)
    shared, nan_guard = training.make_callbacks(run, task, prepared, inputs,
                                                FLAGS.log_every_steps, FLAGS.probe_sentence)
    training.fit(model, strategy, FLAGS.strategy, inputs, shared, run, config.training.epochs)
    return training.finish(run, model, inputs, nan_guard, FLAGS.export_dir)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
