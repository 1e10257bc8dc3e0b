"""Command-line programs (absl) of dsan_tf: `python -m experiments.<name> --helpfull`."""
