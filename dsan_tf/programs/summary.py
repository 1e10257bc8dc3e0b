"""Prints the model's parameter count, per part, for the given model flags.

    dsan-summary [--config=dsan_snli] [model flags]
    dsan-summary --model=disan
    dsan-summary --workdir=runs/dsan     # the model a run trained

The last line is `params_excluding_embeddings=N` (trainable, word embeddings excluded).
"""

import dataclasses
import os

from absl import flags

from dsan_tf.core import rundir
from dsan_tf.models import registry
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS



def define_flags():
    project_flags.define_model_flags()
    # Not used here, but defined so that a training flagfile describes the model as it is.
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_run_flags()
    flags.DEFINE_integer("vocab_size", 2, "Vocabulary size (the word embedding's rows).")
    flags.DEFINE_string("workdir", None, "A run directory of dsan-train: count the "
                        "model it trained (its config.json) instead of the model flags.")
    project_flags.require_existing("workdir", directory=True)


@program.main
def main(argv):
    model, config = run_model(FLAGS.workdir) if FLAGS.workdir else flags_model()
    from dsan_tf import build_model  # TensorFlow loads here, not for --help

    parts = build_model(model, config).parameter_breakdown()
    print(f"model: {model}, {config.to_dict()}")
    total = parts.pop("params_excluding_embeddings")
    for name, count in parts.items():
        note = " (excluded below)" if name == "word_embedding" else ""
        label = f"  - {name.split('.')[1]}" if "." in name else name
        print(f"  {label:<20} {count:>12,}{note}")
    # As its paper reports it, excluding word embeddings (Im & Cho 2017, Table 2).
    reported = registry.family(model).paper_parameters
    print(f"  {'total':<20} {total:>12,}" + (f"  (paper: {reported})" if reported else ""))
    print(f"params_excluding_embeddings={total}")


def flags_model():
    """(family, configuration) that --config and the model flags describe: a named
    configuration's family, not --model's default, unless --model is given."""
    experiment = project_flags.experiment_config()
    return experiment.model, dataclasses.replace(experiment.model_config,
                                                 vocab_size=FLAGS.vocab_size)


def run_model(workdir):
    """(family, configuration with its vocabulary size) of the run in `workdir`;
    `UsageError` when model flags are given too or it holds no config.json."""
    given = [name for name in ("model", "vocab_size", *project_flags.model_hyperparameters())
             if FLAGS[name].present]
    if given:
        raise program.UsageError(f"--workdir counts the model the run trained; leave out "
                                 f"{', '.join('--' + name for name in given)}.")
    path = os.path.join(workdir, rundir.CONFIG)
    if not os.path.exists(path):
        raise program.UsageError(f"--workdir={workdir} holds no {rundir.CONFIG} (give a run "
                                 "directory of dsan-train).")
    recorded = rundir.read_json(path)
    values = dict(recorded["model_config"], vocab_size=recorded["vocab_size"])
    return recorded["model"], registry.family(recorded["model"]).config.from_dict(values)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
