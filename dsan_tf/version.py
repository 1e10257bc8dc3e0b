"""The package version (one place: pyproject.toml reads it as dsan_tf.__version__)."""

__version__ = "0.4.0"
