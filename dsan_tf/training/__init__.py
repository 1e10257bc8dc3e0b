"""The training library: the steps of a training run (`steps`: devices, data, model,
callbacks, fit, results), its Keras callbacks and the run's record of each epoch.

`dsan_tf.programs.train` parses flags into an `ExperimentConfig` (what is trained) and a
`RunPolicy` (how it runs) and calls `steps.train_run`; a Python caller can do the same
without flags.
"""
