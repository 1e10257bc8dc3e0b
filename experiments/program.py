"""What every program does the same way: start, check its flags, and stop with one
sentence (no traceback) on a user's mistake.

Library code raises (`UsageError` here, `dsan_tf.data.DataError`, ValueError for bad
model settings); only `main` turns that into an exit.
"""

import functools
import sys

from absl import app, flags, logging

from experiments import flags as project_flags

FLAGS = project_flags.FLAGS


class UsageError(Exception):
    """A mistake in how a program was called, described in one sentence."""


def fail(message):
    """Stops the program with one clear sentence, no traceback."""
    sys.exit(f"error: {message}")


def check_start(argv, **required):
    """No positional arguments, and each required flag given (`name="what to give"`)."""
    if len(argv) > 1:
        raise UsageError(f"unexpected arguments {argv[1:]}; every option is a --flag.")
    for name, what in required.items():
        if not FLAGS[name].value:
            raise UsageError(f"give --{name}, {what}.")


def main(function):
    """Decorates a program's `main(argv)`: absl logging at WARNING (TF's INFO lines would
    bury the program's own output), and a user's mistake ends the program with its one
    sentence."""
    @functools.wraps(function)
    def wrapper(argv):
        logging.set_verbosity(logging.WARNING)
        try:
            return function(argv)
        except (UsageError, flags.ValidationError) as error:
            fail(str(error))
        except ValueError as error:
            from dsan_tf.data import DataError  # TensorFlow is loaded by now
            if isinstance(error, DataError):
                fail(str(error))
            raise
    return wrapper


def run(main_function, define_flags):
    """Defines the program's flags and runs it (the console scripts' entry point)."""
    define_flags()
    # --help lists the "key flags" of sys.argv[0]: make every flag the program defined one,
    # the shared ones too, whether it runs as `python -m` or as a console script.
    for module, module_flags in FLAGS.flags_by_module_dict().items():
        if module.startswith("experiments") or module.endswith(".py"):
            for flag in module_flags:
                FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    app.run(main_function)
