"""`python -m experiments.predict` from a clone (`dsan-predict` once installed)."""

from dsan_tf.programs.predict import cli

if __name__ == "__main__":
    cli()
