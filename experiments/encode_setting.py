"""`python -m experiments.encode_setting` from a clone (`dsan-encode-setting` once installed)."""

from dsan_tf.programs.encode_setting import cli

if __name__ == "__main__":
    cli()
