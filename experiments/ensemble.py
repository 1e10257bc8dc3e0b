"""`python -m experiments.ensemble` from a clone (`dsan-ensemble` once installed)."""

from dsan_tf.programs.ensemble import cli

if __name__ == "__main__":
    cli()
