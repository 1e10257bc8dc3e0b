"""The training library: the steps of a training run (`steps`: devices, data, model,
callbacks, fit, results), its Keras callbacks and tf.distribute strategies.

`dsan_tf.programs.train` parses flags into an `ExperimentConfig` and `RunOptions` and
calls `steps.train`; a Python caller can do the same without flags.
"""
