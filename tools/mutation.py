"""Mutation check: is each curated one-line change of what the code does caught by the
default suite? (the list: `tools.mutants.MUTANTS`.)

    python -m tools.mutation                 # every mutant
    python -m tools.mutation --sample=6 --seed=$(git rev-parse --short HEAD)
    python -m tools.mutation --only=3,7      # by number (1 = the first)

Each mutant is applied, alone, to a copy of the clone (its tracked files) in a temporary
directory, and the test files the entry names run there (`pytest -x`, fail fast, the default
suite's options) with the copy first on the path. A mutant is caught (a test failed),
missed (they all passed: the defect would reach users), an error (pytest could not run)
or stale (its text is no longer in
the file, exactly once). Ends with `caught=N/M`; the exit status is 1 unless every mutant
run was caught.
"""

import argparse
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

from tools.mutants import MUTANTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tracked_files():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [name for name in listed if not name.startswith(("docs/", "tools/"))]


def copy_clone(target):
    for name in tracked_files():
        source = os.path.join(ROOT, name)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
            shutil.copy2(source, os.path.join(target, name))


def check_list():
    """Every test file named exists in the default suite (tests/, not only `slow`)."""
    for number, (path, old, new, seen, tests) in enumerate(MUTANTS, 1):
        for test in tests:
            file = test.split("::")[0]
            if not (file.startswith("tests/test_") and os.path.isfile(os.path.join(ROOT, file))):
                raise SystemExit(f"mutant {number}: {file} is not a test file of the suite.")


def stale(path, old):
    """Whether the mutant's text `old` no longer occurs exactly once in `path` (a change
    moved or rewrote its line): the mutant would test nothing."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as stream:
        return stream.read().count(old) != 1


def run(number, path, old, new, tests, keep=False):
    """'caught', 'missed' or 'stale' for one mutant (number 0, `old` None: the clone as it
    is, the baseline), and the seconds it took."""
    started = time.perf_counter()
    if path and stale(path, old):
        return "stale", 0.0
    text = open(os.path.join(ROOT, path), encoding="utf-8").read() if path else ""
    base = tempfile.mkdtemp(prefix=f"mutant{number}_")
    work = os.path.join(base, "clone")
    shared = os.path.join(os.path.dirname(ROOT), "shared")
    if os.path.isdir(shared):  # the clone's layout: ../shared beside it, as the tests expect
        os.symlink(shared, os.path.join(base, "shared"))
    try:
        copy_clone(work)
        if path:
            with open(os.path.join(work, path), "w", encoding="utf-8") as stream:
                stream.write(text.replace(old, new))
        env = {**os.environ, "PYTHONPATH": work + os.pathsep + os.environ.get("PYTHONPATH", "")}
        where = subprocess.run([sys.executable, "-c", "import dsan_tf; print(dsan_tf.__file__)"],
                               cwd=work, env=env, capture_output=True, text=True)
        if not where.stdout.strip().startswith(work):
            raise SystemExit(f"the copy's dsan_tf is not the one imported: {where.stdout}")
        # Tests of one file run in one process: xdist's workers would each start TensorFlow
        # for a file that only one of them gets (--dist loadfile).
        workers = ["-n", "0"] if len({test.split("::")[0] for test in tests}) == 1 else []
        result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly",
                                 *workers, *tests], cwd=work, env=env, capture_output=True,
                                text=True)
        # With -x, xdist ends "Interrupted" (exit 2) after the first failure.
        failed = re.search(r"\b\d+ (failed|errors?)\b", result.stdout)
        outcome = "missed" if result.returncode == 0 else (
            "caught" if failed else f"error (pytest exit {result.returncode})")
        return outcome, time.perf_counter() - started
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def markdown_table(numbers):
    """The list as docs/DEVELOPMENT.md shows it (tests/test_docs.py keeps the two equal)."""
    lines = ["| # | file | what a user would see | caught by |", "|---:|---|---|---|"]
    for number in numbers:
        path, _, _, seen, tests = MUTANTS[number - 1]
        shown = ", ".join(f"`{test.replace('tests/', '')}`" for test in tests)
        lines.append(f"| {number} | `{path}` | {seen} | {shown} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, help="run this many mutants, drawn by --seed")
    parser.add_argument("--seed", default="0", help="any text (e.g. the commit)")
    parser.add_argument("--only", help="comma-separated mutant numbers")
    parser.add_argument("--list", action="store_true", help="print the list and stop")
    parser.add_argument("--skip_baseline", action="store_true", help="do not first run the "
                        "named tests unmutated: only when the default suite has just passed "
                        "on this clone (CI runs it first)")
    parser.add_argument("--markdown", action="store_true", help="print the list as the "
                        "Markdown table of docs/DEVELOPMENT.md and stop")
    args = parser.parse_args(argv)
    check_list()
    numbers = list(range(1, len(MUTANTS) + 1))
    if args.only:
        numbers = [int(n) for n in args.only.split(",")]
    elif args.sample:
        seed = int(hashlib.sha256(args.seed.encode()).hexdigest()[:8], 16)
        numbers = sorted(random.Random(seed).sample(numbers, min(args.sample, len(numbers))))
    if args.markdown:
        print(markdown_table(numbers))
        return 0
    if args.list:
        for number in numbers:
            path, _, _, seen, tests = MUTANTS[number - 1]
            print(f"{number:3d} {path}: {seen} [{', '.join(tests)}]")
        return 0
    # The tests must pass on the clone as it is, or a failure says nothing of a mutant.
    named = list(dict.fromkeys(test for number in numbers for test in MUTANTS[number - 1][4]))
    if args.skip_baseline:
        print(f"  0 skipped: the {len(named)} named test files or tests are taken to pass "
              "unmutated (--skip_baseline)", flush=True)
    else:
        outcome, seconds = run(0, None, None, None, named)
        print(f"  0 {'passed' if outcome == 'missed' else 'FAILED':<7} {seconds:6.0f} s  the "
              f"clone unmutated, the {len(named)} named test files or tests", flush=True)
        if outcome != "missed":
            print("the named tests fail without a mutant: fix them first.")
            return 2
    caught = 0
    for number in numbers:
        path, old, new, seen, tests = MUTANTS[number - 1]
        outcome, seconds = run(number, path, old, new, tests)
        caught += outcome == "caught"
        print(f"{number:3d} {outcome:<7} {seconds:6.0f} s  {path}: {seen}", flush=True)
    print(f"caught={caught}/{len(numbers)}")
    return 0 if caught == len(numbers) else 1


if __name__ == "__main__":
    sys.exit(main())
