"""What every layer of the package reads, in plain Python (no Keras, no TensorFlow): the
label names (`labels`), the choices layers check and configurations offer (`choices`), the
one-sentence user errors (`errors`), progress lines (`progress`) and the quiet loading of
the frameworks (`quiet`)."""
