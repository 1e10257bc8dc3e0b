"""`python -m experiments.summary` from a clone (`dsan-summary` once installed)."""

from dsan_tf.programs.summary import cli

if __name__ == "__main__":
    cli()
