"""`python -m experiments.embed` from a clone (`dsan-embed` once installed)."""

from dsan_tf.programs.embed import cli

if __name__ == "__main__":
    cli()
