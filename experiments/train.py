"""`python -m experiments.train` from a clone (`dsan-train` once installed)."""

from dsan_tf.programs.train import cli

if __name__ == "__main__":
    cli()
