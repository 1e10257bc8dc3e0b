"""Registration of the project's Keras classes on `import dsan_tf`, without loading Keras.

`keras.saving.load_model` finds a custom class only once its module has run its
`register_keras_serializable` decorator. Importing every layer and model with `dsan_tf`
would load Keras (and TensorFlow) into every program's `--help`; so `import dsan_tf` only
watches for Keras: when Keras is (or already was) imported, the modules that define the
classes (`dsan_tf.models.register_keras_classes`) are imported. When a module of this
project (or Keras' own import) is part-way through, registration waits for the first
import after it. Registration also plugs what makes the steps fast (`dsan_tf.speed`) into
the task models, which do not import it (it sits above them).
"""

import importlib
import importlib.abc
import importlib.util
import sys


def _importing(module):
    """Whether `module` (or None) is part-way through its import."""
    return getattr(getattr(module, "__spec__", None), "_initializing", False)


def _initializing(done=None):
    """Whether a module of this project, of Keras or of TensorFlow (other than `done`,
    which has run) is part-way through its import (registering then would meet half-made
    modules)."""
    return any(name.split(".")[0] in ("dsan_tf", "keras", "tensorflow") and
               name != done and _importing(module)
               for name, module in list(sys.modules.items()))


def register():
    """Imports the modules that register the Keras classes
    (`dsan_tf.models.register_keras_classes`), and gives the task models the hook of what
    makes their steps fast (`dsan_tf.speed.steps.attach`)."""
    from dsan_tf import models
    from dsan_tf.models.text_model import TextModel
    from dsan_tf.speed import steps

    models.register_keras_classes()
    TextModel.compiled_hook = steps.attach


class _AfterKeras(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `keras` through the other finders and registers once it has run, or, if a
    module of this project was importing it, at the first import after that one."""

    def __init__(self, keras_loaded=False):
        self.loader = True if keras_loaded else None

    def find_spec(self, name, path=None, target=None):
        if self.loader is None:
            if name != "keras":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return None
            self.loader, spec.loader = spec.loader, self
            return spec
        self._register_when_ready()
        return None

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self._register_when_ready(done=module.__name__)

    def _register_when_ready(self, done=None):
        # While Keras itself imports (TensorFlow with it: some 4,000 imports, each of which
        # calls this), nothing can be ready: the scan of every module that `_initializing`
        # makes would cost each program's start-up seconds.
        if done != "keras" and _importing(sys.modules.get("keras")):
            return
        if self in sys.meta_path and not _initializing(done):
            sys.meta_path.remove(self)
            register()


def watch():
    """Registers now if Keras is loaded, else when it loads (`import dsan_tf` calls it)."""
    # `import dsan_tf` calls it last: the package itself has run.
    if "keras" in sys.modules and not _initializing(done="dsan_tf"):
        register()
    elif not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKeras(keras_loaded="keras" in sys.modules))
