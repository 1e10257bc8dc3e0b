"""`python -m experiments.visualize` from a clone (`dsan-visualize` once installed)."""

from dsan_tf.programs.visualize import cli

if __name__ == "__main__":
    cli()
