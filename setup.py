"""The package is declared in pyproject.toml (PEP 517/621); this file lets tools that still
call `setup.py` build it, and keeps each family's part of the shared tests
(`dsan_tf/models/<family>/testing.py`, beside its code as keras-hub keeps its tests) out of
the wheel: tests/test_packaging.py lists the wheel's files."""

from setuptools import setup
from setuptools.command.build_py import build_py

TEST_ONLY = "testing"  # a module of this name, in any package, is the tests'


class BuildWithoutTests(build_py):
    """setuptools' `build_py`, less the tests' modules."""

    def find_package_modules(self, package, package_dir):
        return [(found, module, path) for found, module, path
                in super().find_package_modules(package, package_dir)
                if module != TEST_ONLY]


setup(cmdclass={"build_py": BuildWithoutTests})
