r"""Reads, tokenizes and encodes a training setting (TensorFlow's tokenizer and vocabulary,
the word vectors) into one small `.npz` file that a machine without TensorFlow trains on
(`dsan-train --setting`): the same ids, vectors and configuration.

    dsan-encode-setting --config=snli25k_glove50 \
        --output=settings/snli25k_glove50.npz
"""

import tempfile

from absl import flags

from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_model_flags()
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_step_flags()
    flags.DEFINE_string("output", None, "The .npz file to write.")


@program.main(required={"output": "the .npz file to write"})
def main(argv):
    config = project_flags.experiment_config()  # a --config's data flags count
    for name, what in (("train_data", "the training data"),
                       ("dev_data", "the development data")):
        if not getattr(config.data, name):
            raise program.UsageError(f"give --{name}, {what}.")
    # Unset choices are decided where it trains (JAX: compiled, bounded shapes).
    policy = project_flags.run_policy()
    from dsan_tf.core import rundir  # TensorFlow loads here, after --help
    from dsan_tf.data.batching import IdPairs
    from dsan_tf.core.task import NLITask
    from dsan_tf.training import driver
    from dsan_tf.training.setting import EncodedSetting

    with tempfile.TemporaryDirectory() as scratch:
        prepared = driver.prepare_data(NLITask(config), rundir.RunDirectory(scratch))
    setting = EncodedSetting(
        config, policy,
        {name: IdPairs.from_encoded(pairs) for name, pairs in prepared.encoded.items()},
        prepared.word_vectors, list(prepared.preprocessor.vocabulary.words), prepared.found)
    setting.save(FLAGS.output)
    splits = ", ".join(f"{name} {len(pairs):,} pairs" for name, pairs in setting.splits.items())
    print(f"encoded setting: {FLAGS.output} ({splits}, {setting.vocabulary_size:,} ids)")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
