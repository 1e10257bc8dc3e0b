"""The code stays cheap to change: no function of the package or the programs is longer than
one screen (50 lines, docstring included)."""

import ast

from helpers import ROOT

LIMIT = 50


def test_no_function_is_longer_than_50_lines():
    long = []
    for folder in ("dsan_tf", "experiments"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > LIMIT:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                                    f"({lines} lines)")
    assert not long, "functions longer than 50 lines: " + "; ".join(long)
