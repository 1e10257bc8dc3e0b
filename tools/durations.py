"""The default suite's cost per test file, measured: wall minutes of the whole run and
worker minutes (setup, call and teardown summed) of each file, on the machine it ran on.

    python -m tools.durations                      # runs the suite, prints the table
    python -m tools.durations --write              # ... and puts it in records/machines.md
    python -m tools.durations --junitxml=run.xml   # the table of a run already made
                                                   # (`pytest --junitxml=run.xml`)

The table goes between the markers `<!-- durations -->` and `<!-- /durations -->` of
records/machines.md, so it is regenerated, never written by hand. Exit status: the suite's.
"""

import argparse
import collections
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "records", "machines.md")
START, END = "<!-- durations -->", "<!-- /durations -->"


def machine():
    """The CPU's model, its cores and whether it has AVX-512 (TensorFlow turns oneDNN on
    there unless TF_ENABLE_ONEDNN_OPTS says otherwise)."""
    model, avx512 = platform.processor() or platform.machine(), False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            text = stream.read()
        found = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
        model = found.group(1).strip() if found else model
        avx512 = "avx512f" in text
    except OSError:
        pass
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "TF's default: " + (
        "on" if avx512 else "off"))
    return (f"{model}, {os.cpu_count()} cores, {'with' if avx512 else 'without'} AVX-512, "
            f"oneDNN {onednn}")


def per_file(junitxml):
    """{test file: (tests, seconds)} and the outcome counts of a JUnit XML report."""
    files = collections.defaultdict(lambda: [0, 0.0])
    outcomes = collections.Counter()
    for case in ElementTree.parse(junitxml).getroot().iter("testcase"):
        name = case.get("classname", "").split(".")[-1] if case.get("file") is None \
            else os.path.basename(case.get("file"))
        name = name if name.endswith(".py") else name + ".py"
        files[name][0] += 1
        files[name][1] += float(case.get("time") or 0.0)
        kinds = {child.tag for child in case}
        outcome = ("failed" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "passed")
        outcomes[outcome] += 1
    return {name: tuple(value) for name, value in files.items()}, outcomes


def table(files, outcomes, wall_seconds, when, where):
    """The Markdown block: a heading line, then one row per file, costliest first."""
    worker = sum(seconds for _, seconds in files.values())
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(outcomes.items()))
    lines = [START,
             f"Measured {when} on {where} by `python -m tools.durations --write`: {counts}; "
             f"**{wall_seconds / 60:.1f} minutes wall, {worker / 60:.1f} worker-minutes**.",
             "",
             "| test file | tests | worker minutes | share |",
             "|---|---:|---:|---:|"]
    for name, (tests, seconds) in sorted(files.items(), key=lambda item: -item[1][1]):
        lines.append(f"| `{name}` | {tests} | {seconds / 60:.2f} | "
                     f"{100 * seconds / max(worker, 1e-9):.0f}% |")
    lines.append(END)
    return "\n".join(lines)


def write(block, page=PAGE):
    """Replaces the block between the markers of `page` (they must be there)."""
    with open(page, encoding="utf-8") as stream:
        text = stream.read()
    if START not in text or END not in text:
        sys.exit(f"error: {page} has no {START} ... {END} markers to write the table between.")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    with open(page, "w", encoding="utf-8") as stream:
        stream.write(before + block + after)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junitxml", help="Read this report instead of running the suite.")
    parser.add_argument("--wall_seconds", type=float,
                        help="The wall time of that report's run (default: its own figure).")
    parser.add_argument("--write", action="store_true", help="Write the table into "
                        "records/machines.md between its markers.")
    parser.add_argument("pytest_args", nargs="*", help="Passed on to pytest.")
    args = parser.parse_args(argv)
    status = 0
    with tempfile.TemporaryDirectory() as scratch:
        report = args.junitxml
        wall = args.wall_seconds
        if report is None:
            report = os.path.join(scratch, "suite.xml")
            started = time.perf_counter()
            status = subprocess.run([sys.executable, "-m", "pytest", f"--junitxml={report}",
                                     "-o", "junit_family=xunit1", *args.pytest_args],
                                    cwd=ROOT).returncode
            wall = time.perf_counter() - started
        if wall is None:
            suite = ElementTree.parse(report).getroot()
            suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
            wall = float(suite.get("time"))
        files, outcomes = per_file(report)
    block = table(files, outcomes, wall, datetime.date.today().isoformat(), machine())
    print(block)
    if args.write:
        write(block)
    return status


if __name__ == "__main__":
    sys.exit(main())
