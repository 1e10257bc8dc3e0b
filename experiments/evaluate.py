"""`python -m experiments.evaluate` from a clone (`dsan-evaluate` once installed)."""

from dsan_tf.programs.evaluate import cli

if __name__ == "__main__":
    cli()
