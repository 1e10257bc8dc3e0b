"""`python -m experiments.export` from a clone (`dsan-export` once installed)."""

from dsan_tf.programs.export import cli

if __name__ == "__main__":
    cli()
