"""Every ```python block of README.md and docs/*.md runs alone: in an
empty directory of its own and a namespace of its own, as a reader pastes it, with what the
pages assume beside it: a finished run with its export at runs/dsan (a copy of the shared
demo run, tests/conftest.py), and ../shared (the blocks that read it are skipped without
it)."""

import os
import re
import shutil
import warnings

import pytest

from helpers import ROOT

SHARED = ROOT.parent / "shared"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [(page, number, code) for page in PAGES
          for number, code in enumerate(
              re.findall(r"^ *```python\n(.*?)^ *```", page.read_text(encoding="utf-8"),
                         flags=re.S | re.M), 1)]


def _dedent(code):
    """A block indented under a list item, as Markdown allows."""
    lines = code.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines) + "\n"


def test_the_pages_have_their_blocks():
    found = {(page.name, number) for page, number, _ in BLOCKS}
    assert {("README.md", 1), ("API.md", 4), ("DATA.md", 1), ("SERVING.md", 1)} <= found


@pytest.mark.parametrize("page,number,code", BLOCKS,
                         ids=[f"{page.name}:{number}" for page, number, _ in BLOCKS])
def test_a_block_runs_alone(demo, tmp_path, monkeypatch, page, number, code):
    if "../shared" in code and not SHARED.is_dir():
        pytest.skip("needs ../shared/data")
    work = tmp_path / "work"
    (work / "runs").mkdir(parents=True)
    shutil.copytree(demo[0], work / "runs" / "dsan")  # a copy: a block may write there
    if SHARED.is_dir():
        os.symlink(SHARED, tmp_path / "shared")
    monkeypatch.chdir(work)
    # In this process (TensorFlow is loaded once for all blocks), in a namespace of its own,
    # as a script: its names are its own, and a failure names the page and block.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(_dedent(code), f"{page.name} block {number}", "exec"),
             {"__name__": "__main__"})
    # What a reader copying the block would see: not Keras' "shuffle=True ... will be
    # ignored" for the datasets the project makes.
    assert not [w for w in caught if "will be ignored" in str(w.message)]


def test_the_mutation_list_is_documented_as_it_is():
    """docs/DEVELOPMENT.md shows every mutant of tools/mutants.py, as `python -m
    tools.mutation --markdown` prints the list (the whole list is documented)."""
    from tools import mutation

    table = mutation.markdown_table(range(1, len(mutation.MUTANTS) + 1))
    assert table in (ROOT / "docs" / "DEVELOPMENT.md").read_text(encoding="utf-8"), (
        "docs/DEVELOPMENT.md's mutant table is out of date: paste `python -m tools.mutation "
        "--markdown` there.")


def test_fidelity_rows_are_linked_by_anchor_not_by_number():
    """A link to a row or section of docs/FIDELITY.md names its anchor, so
    that it survives a reordering of the table: every `FIDELITY.md#name` anywhere in the
    project, and every `(#name)` inside the table, is an anchor the page defines, each row
    has one, and nothing points at a row by its number."""
    page = (ROOT / "docs" / "FIDELITY.md").read_text()
    anchors = re.findall(r'<a id="([a-z0-9-]+)"></a>', page)
    assert len(anchors) == len(set(anchors))
    rows = re.findall(r"^\| (\d+) \| (.*?) \|", page, re.M)
    assert rows and all(cell.startswith('<a id="') for _, cell in rows)
    used = set(re.findall(r"\]\(#([a-z0-9-]+)\)", page))
    by_number = re.findall(r"\brows? \d+", page.replace("row 0 ", "").replace("rows 0,", ""))
    paths = [ROOT / "README.md", *(path for folder in ("dsan_tf", "docs", "experiments",
                                                      "benchmarks", "tests", "tools")
                                   for path in (ROOT / folder).rglob("*"))]
    for path in paths:
        if path.suffix not in (".py", ".md", ".cfg") or "trained" in path.parts or \
                path.name == "test_docs.py":
            continue
        text = path.read_text()
        for first, more in re.findall(
                r"FIDELITY\.md#([a-z0-9-]+)((?:,? (?:and )?#[a-z0-9-]+)*)", text):
            used.add(first)
            used.update(re.findall(r"#([a-z0-9-]+)", more))
        by_number += [f"{path.name}: {hit}" for hit in re.findall(
            r"FIDELITY(?:\.md)?[,)]?\s*\(?rows? \d+", text)]
    assert not set(used) - set(anchors), f"links to no anchor: {set(used) - set(anchors)}"
    assert len(used) > 20
    assert not by_number, f"rows named by number: {by_number}"


def _docstring_examples():
    """(where, code) of each ```python block under "Examples:" in a docstring of the
    package (classes and their methods)."""
    import ast

    found = []
    for path in sorted((ROOT / "dsan_tf").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                continue
            text = ast.get_docstring(node) or ""
            if "Examples:" not in text:
                continue
            blocks = re.findall(r"```python\n(.*?)```", text.split("Examples:", 1)[1], re.S)
            assert blocks, f"{path.name}:{node.name}: Examples without a ```python block"
            found += [(f"{path.relative_to(ROOT)}:{node.name}", block) for block in blocks]
    return found


# The public classes a user builds or loads (keras-hub's habit: an Examples block each).
PUBLIC = ("NLIClassifier", "NLIEnsemble", "NLIPreprocessor", "DSANBackbone", "DSANEncoder",
          "DSANBlock", "MaskedMultiHeadAttention", "FusionGate", "Source2TokenAttention",
          "MaskedMaxPooling", "PositionwiseFeedForward", "ClassificationHead",
          "MatchingFeatures", "LayerNorm", "DistancePrior", "Adam", "DiSANBackbone",
          "DiSANEncoder", "CBOWBackbone", "GaussianTransformerBackbone", "AFDMNBackbone",
          "ExperimentConfig", "SavedModelClassifier")


@pytest.mark.parametrize("where, code", _docstring_examples(), ids=lambda value: value
                         if isinstance(value, str) and ".py:" in value else "")
def test_a_docstrings_example_runs(where, code):
    """Each docstring's Examples block runs as printed, in a namespace of its own; the
    public classes each have one."""
    exec(compile(code, where, "exec"), {"__name__": "__example__"})


def test_the_public_classes_have_examples():
    have = {where.rsplit(":", 1)[1] for where, _ in _docstring_examples()}
    assert not set(PUBLIC) - have, sorted(set(PUBLIC) - have)


def test_the_manual_holds_no_dated_or_per_machine_note_and_no_data_file():
    """docs/ and the README say how the project is now: a dated measurement, a timing of one
    CPU model and a data file are records (records/, README there)."""
    found = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            hit = re.search(r"\b20\d\d-\d\d-\d\d\b|\bXeon\b|\bEPYC\b|\bthis (CPU|machine)\b", line)
            if hit:
                found.append(f"{page.relative_to(ROOT)}:{number}: {hit.group(0)}")
    assert not found, found
    assert sorted(path.name for path in (ROOT / "docs").iterdir()
                  if path.suffix != ".md") == []
