"""Prints the model's parameter count, per part, for the given model flags.

    python -m experiments.summary [--flagfile=experiments/configs/dsan_snli.cfg] [model flags]
    python -m experiments.summary --model=disan

The last line is `params_excluding_embeddings=N` (trainable, word embeddings excluded).
"""

from absl import flags

from dsan_tf.models import registry
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS



def define_flags():
    project_flags.define_model_flags()
    # Not used here, but defined so that a training flagfile describes the model as it is.
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    flags.DEFINE_integer("vocab_size", 2, "Vocabulary size (the word embedding's rows).")


@program.main
def main(argv):
    program.check_start(argv)
    config = project_flags.model_config(vocab_size=FLAGS.vocab_size)
    from dsan_tf import build_model  # TensorFlow loads here, not for --help

    parts = build_model(FLAGS.model, config).parameter_breakdown()
    print(f"model: {FLAGS.model}, {config.to_dict()}")
    total = parts.pop("params_excluding_embeddings")
    for name, count in parts.items():
        note = " (excluded below)" if name == "word_embedding" else ""
        label = f"  - {name.split('.')[1]}" if "." in name else name
        print(f"  {label:<20} {count:>12,}{note}")
    # As its paper reports it, excluding word embeddings (Im & Cho 2017, Table 2).
    reported = registry.family(FLAGS.model).paper_parameters
    print(f"  {'total':<20} {total:>12,}" + (f"  (paper: {reported})" if reported else ""))
    print(f"params_excluding_embeddings={total}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
