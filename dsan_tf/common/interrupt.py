"""Ctrl-C that always stops a program.

Python raises KeyboardInterrupt wherever the main thread runs Python code when SIGINT
arrives. If that is a finalizer (an object's `__del__`, a weakref callback: TensorFlow and
Keras run many while training), the exception cannot leave it: Python prints "Exception
ignored in ..." with a traceback and the program goes on, as if Ctrl-C was never pressed.
`install` keeps such an interrupt instead, and `check` raises it again where the program
can stop (a Keras callback after each batch: `dsan_tf.training.callbacks.Interruptible`).
Where the interrupt lands in TensorFlow's tracing (a SavedModel's export), TensorFlow's
clean-up raises another error over it (a `SystemError`): `behind` tells such an error.
"""

import sys

_pending = False


def install():
    """Keeps a KeyboardInterrupt a finalizer swallowed (without its traceback) for `check`;
    every other unraisable exception goes to the hook there was. Idempotent (the hook is
    looked at, not remembered: a test runner may put its own back)."""
    if getattr(sys.unraisablehook, "keeps_interrupts", False):
        return
    previous = sys.unraisablehook

    def hook(unraisable):
        global _pending
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _pending = True
        else:
            previous(unraisable)

    hook.keeps_interrupts = True
    sys.unraisablehook = hook


def check():
    """Raises the KeyboardInterrupt a finalizer swallowed since the last call, if any."""
    global _pending
    if _pending:
        _pending = False
        raise KeyboardInterrupt


def behind(error):
    """Whether `error` came of a Ctrl-C: a KeyboardInterrupt in its chain of causes (an
    error raised while handling it), or one a finalizer swallowed (then no longer kept)."""
    global _pending
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    if _pending:
        _pending = False
        return True
    return False
