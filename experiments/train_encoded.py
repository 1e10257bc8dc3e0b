"""`python -m experiments.train_encoded` from a clone (`dsan-train-encoded` once installed)."""

from dsan_tf.programs.train_encoded import cli

if __name__ == "__main__":
    cli()
