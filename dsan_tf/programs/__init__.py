"""The command-line programs (absl mains): each parses its flags once into configuration
objects and calls the library. `python -m experiments.NAME` from a clone and the console
scripts (`dsan-train`, ...) after `pip install` run them. Modules here load no TensorFlow
before flags are parsed, so `--help` is fast.
"""
