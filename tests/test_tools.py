"""The developers' tools: the suite's cost table (tools/durations.py) and the mutants' list."""

import pytest

from tools import durations

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4" time="95.5">
<testcase classname="tests.test_cli" name="test_a" file="tests/test_cli.py" time="60.0"/>
<testcase classname="tests.test_cli" name="test_b" file="tests/test_cli.py" time="30.0">
<failure message="boom">boom</failure></testcase>
<testcase classname="tests.test_text" name="test_c" file="tests/test_text.py" time="6.0">
<skipped message="needs data"/></testcase>
<testcase classname="tests.test_text" name="test_d" file="tests/test_text.py" time="24.0"/>
</testsuite></testsuites>
"""


def test_the_table_sums_each_files_minutes_and_counts_outcomes(tmp_path):
    report = tmp_path / "suite.xml"
    report.write_text(REPORT)
    files, outcomes = durations.per_file(report)
    assert files == {"test_cli.py": (2, 90.0), "test_text.py": (2, 30.0)}
    assert outcomes == {"passed": 2, "failed": 1, "skipped": 1}
    block = durations.table(files, outcomes, 95.5, "2026-11-26", "a 2-core CPU")
    lines = block.splitlines()
    assert lines[0] == durations.START and lines[-1] == durations.END
    assert "1 failed, 2 passed, 1 skipped; **1.6 minutes wall, 2.0 worker-minutes**" in lines[1]
    assert lines[5:7] == ["| `test_cli.py` | 2 | 1.50 | 75% |",
                          "| `test_text.py` | 2 | 0.50 | 25% |"]


def test_the_table_replaces_only_what_is_between_the_markers(tmp_path):
    page = tmp_path / "DEVELOPMENT.md"
    page.write_text(f"before\n{durations.START}\nold\n{durations.END}\nafter\n")
    durations.write(f"{durations.START}\nnew\n{durations.END}", page=page)
    assert page.read_text() == f"before\n{durations.START}\nnew\n{durations.END}\nafter\n"
    page.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no <!-- durations --> ... <!-- /durations -->"):
        durations.write("x", page=page)


def test_every_mutant_still_finds_its_line():
    """A mutant whose text the code no longer holds is reported stale, not caught, and
    only when the mutation run reaches it: each one's text occurs exactly once in its
    file now (a change that moves or rewrites the line updates the mutant with it)."""
    from tools import mutation

    stale = [f"{number}: {file}" for number, (file, old, *_) in enumerate(mutation.MUTANTS, 1)
             if mutation.stale(file, old)]
    assert not stale, f"mutants whose text is gone or repeated: {stale}"
