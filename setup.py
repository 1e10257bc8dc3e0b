"""The package is declared in pyproject.toml (PEP 517/621); this file only lets tools that
still call `setup.py` build it."""

from setuptools import setup

setup()
