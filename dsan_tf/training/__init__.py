"""The training library: the driver of a training run (`driver`: devices, data, model,
callbacks, fit, results), its Keras callbacks and the run's record of each epoch.

`dsan_tf.programs.train` parses flags into an `ExperimentConfig` (what is trained) and a
`RunPolicy` (how it runs), makes their `NLITask` and calls `driver.train_run` with it; a
Python caller can do the same without flags.
"""
