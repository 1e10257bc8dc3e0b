r"""Trains on an encoded setting (`dsan-encode-setting`) with Keras and NumPy alone,
on any backend, without TensorFlow: the way to a GPU machine that has JAX or PyTorch only.
The same model, batches and early stopping as `dsan-train`; no run directory,
TensorBoard or export. Writes what it measured (epoch times, dev accuracy) as JSON.

    KERAS_BACKEND=jax dsan-train-encoded --setting=snli25k_glove50.npz \
        --output=jax25k.json

The step flags given (--jit_compile, --one_pass, --steps_per_execution, --sentence_programs,
--bounded_shapes, ...) override the setting's policy: how the steps run, not what they
compute (docs/PERFORMANCE.md).
"""

import dataclasses
import json

from absl import flags

from dsan_tf.common import atomic
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    flags.DEFINE_string("setting", None, "The encoded setting (.npz) to train on.")
    flags.DEFINE_string("output", None, "Write the measurements here as JSON.")
    flags.DEFINE_integer("epochs", None, "At most this many epochs (default: the "
                         "setting's).", lower_bound=1)
    flags.DEFINE_integer("patience", None, "Early-stopping patience on dev accuracy "
                         "(default: the setting's; 0: never).", lower_bound=0)
    project_flags.define_step_flags()


@program.main(tensorflow=False)
def main(argv):
    program.check_start(argv, setting="the encoded setting (.npz)")
    from dsan_tf.training.setting import EncodedSetting
    from dsan_tf.training.encoded import train_encoded

    try:
        setting = EncodedSetting.load(FLAGS.setting)
    except (OSError, ValueError) as error:
        raise program.UsageError(f"--setting={FLAGS.setting}: {error}") from None
    changed = {name: FLAGS[name].value for name in project_flags.STEP_FLAGS
               if FLAGS[name].present}
    setting.policy = dataclasses.replace(setting.policy, **changed)
    record = train_encoded(setting, FLAGS.epochs, FLAGS.patience)
    if FLAGS.output:
        atomic.write_text(FLAGS.output, json.dumps(record, indent=2))
    print(f"dev accuracy {record['dev_accuracy']:.4f} (best epoch {record['best_epoch']}); "
          f"median epoch {record['median_epoch_seconds']:.1f} s "
          f"({record['train_pairs_per_second']:,.0f} training pairs/s) on {record['device']}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
