"""The code stays cheap to change: no function of the package or the programs is longer than
one screen (50 lines, docstring included)."""

import ast

from helpers import ROOT

LIMIT = 50


def test_no_function_is_longer_than_50_lines():
    long = []
    for folder in ("dsan_tf", "experiments", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > LIMIT:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                                    f"({lines} lines)")
    assert not long, "functions longer than 50 lines: " + "; ".join(long)


def test_the_layering_contracts_hold_and_the_repository_has_no_import_cycle():
    """.importlinter's contracts (the layers of docs/DEVELOPMENT.md, the families apart,
    the measurement tools above the library), checked as CI checks them, and no file of
    the repository that imports another that imports it back, directly or through
    others."""
    import subprocess
    import sys

    import grimp

    lint = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(no_cache=True, no_logo=True))")
    checked = subprocess.run([sys.executable, "-c", lint], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0 and "0 broken" in checked.stdout, checked.stdout[-3000:]
    # Every Python folder of the repository: the library, the measurement tools, the
    # study and the project's tools.
    graph = grimp.build_graph("dsan_tf", "benchmarks", "experiments", "tools")
    cycles = import_cycles({module: graph.find_modules_directly_imported_by(module)
                            for module in graph.modules})
    assert not cycles, f"files that import each other (through the others listed): {cycles}"


def import_cycles(imports):
    """The groups of modules (two or more) that reach each other through `imports`
    ({module: the modules it imports}): Tarjan's strongly connected components."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in imports.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return groups


def test_import_cycles_finds_a_circle_through_several_files():
    """The cycle check above finds what it looks for: a circle of three files, not a
    chain."""
    chain = {"a": {"b"}, "b": {"c"}, "c": set()}
    assert import_cycles(chain) == []
    assert import_cycles({**chain, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_family_imports_another():
    """Each model family is its own folder: no family's package imports another's, for
    every family the registry finds (a new one is checked without a line anywhere)."""
    import grimp

    from dsan_tf.models import registry

    graph = grimp.build_graph("dsan_tf")
    packages = [f"dsan_tf.models.{name}" for name in registry.PACKAGES]
    crossing = [(a, b) for a in packages for b in packages
                if a != b and graph.chain_exists(a, b, as_packages=True)]
    assert not crossing, f"families that import another: {crossing}"


def test_the_models_define_no_step_functions_of_their_own():
    """What makes the steps fast lives in `dsan_tf.speed`, which `TextModel.compile` calls
    by name (`steps.attach`): no class of the models' or the layers' packages overrides Keras'
    `make_train_function`, `make_test_function` or `make_predict_function`, or defines a
    `train_step`, `test_step` or `predict_step`."""
    steps = {"make_train_function", "make_test_function", "make_predict_function",
             "train_step", "test_step", "predict_step"}
    found = []
    for package in ("models", "layers"):
        for path in sorted((ROOT / "dsan_tf" / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    found += [f"{path.relative_to(ROOT)}: {node.name}.{item.name}"
                              for item in node.body
                              if isinstance(item, ast.FunctionDef) and item.name in steps]
    assert not found, found


def test_every_private_keras_function_called_is_listed_and_exists():
    """The private Keras functions the package calls are listed in one place
    (`dsan_tf.common.keras_private.PRIVATE`): each exists in the installed Keras (a release
    that removes one fails here, by name), and no other module calls one or imports
    `keras.src`."""
    import importlib

    import pytest

    from dsan_tf.common import keras_private

    missing = []
    for where, names in keras_private.PRIVATE.items():
        module, _, name = where.rpartition(".")
        if module.startswith("keras.src.backend.jax"):
            pytest.importorskip("jax")
        owner = getattr(importlib.import_module(module), name)
        missing += [f"{where}.{private}" for private in names if not hasattr(owner, private)]
    assert not missing, f"the installed Keras lacks {missing} (dsan_tf/common/keras_private.py)"
    listed = {private for names in keras_private.PRIVATE.values() for private in names}
    elsewhere = []
    for path in sorted((ROOT / "dsan_tf").rglob("*.py")):
        if path.name == "keras_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in listed:
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("keras.src"):
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}")
    assert not elsewhere, elsewhere
