"""Labels and probabilities for raw text, from a trained run.

    dsan-predict --workdir=DIR --premise="A man sleeps." --hypothesis="A person rests."
    dsan-predict --workdir=DIR --input=pairs.jsonl [--output=FILE] [--format=csv]

--input is a .jsonl file with `sentence1` and `sentence2` (or `premise` and `hypothesis`) per
line (SNLI, MultiNLI, HANS in their jsonl form), or a .csv or .tsv file whose header names
premise,hypothesis or sentence1,sentence2 (each may be gzipped; a spreadsheet's byte-order
mark is read as none); each pair keeps its `pairID` (its position in the file, from 1, when
it has none, whatever the format).
Output: one JSON object per pair (id, premise, hypothesis, label, probabilities), or with
--format=csv the `pairID,gold_label` file that MultiNLI's leaderboard and HANS expect. The
file is read and written in batches (memory stays bounded), with a progress bar on stderr
and the throughput at the end.
"""

import contextlib
import csv
import gzip
import json
import sys
import time
import warnings

import numpy as np
from absl import flags

import dsan_tf  # light: its names (dsan_tf.load, ...) load TensorFlow on first use
from dsan_tf.common import atomic, progress
from dsan_tf.core import rundir
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS
# Pairs read per call of the model, which batches them itself
# (dsan_tf.data.preprocessor.PREDICTION_BATCH_SIZE): the progress line moves per chunk.
CHUNK = 4096


def define_flags():
    project_flags.define_finished_workdir_flag()
    flags.DEFINE_string("premise", None, "A premise.")
    flags.DEFINE_string("hypothesis", None, "A hypothesis.")
    flags.DEFINE_string("input", None, "A .jsonl file of sentence1/sentence2 objects, or a "
                        ".csv/.tsv file with a premise,hypothesis (or sentence1,sentence2) "
                        "header (pairID kept when present).")
    project_flags.require_existing("input")
    flags.DEFINE_string("output", None, "Write the predictions here (default: stdout).")
    project_flags.require_output_file("output")
    flags.DEFINE_boolean("trust_savedmodel", False, "Read an export that holds only a "
                         "SavedModel (no model.keras): its graph is a program that runs "
                         "as it loads, so give this only for a SavedModel you trust.")
    project_flags.refuse_onto_inputs("output", "input")
    flags.DEFINE_enum("format", "jsonl", ["jsonl", "csv"], "jsonl: one JSON object per pair; "
                      "csv: pairID,gold_label (MultiNLI leaderboard, HANS).")


# Column names a CSV/TSV header may give each side (SNLI's own or plain words).
COLUMNS = {"premise": ("premise", "sentence1"), "hypothesis": ("hypothesis", "sentence2")}


def read_pairs(path):
    """Yields (id, premise, hypothesis) from a .jsonl, .csv or .tsv file (optionally .gz):
    JSON objects with sentence1/sentence2 (premise/hypothesis), or a header row naming
    premise,hypothesis or sentence1,sentence2 (pairID optional). Each pair keeps its
    pairID, else its position among the file's pairs (from 1). `UsageError` names the file
    and line of a bad record; blank lines are skipped."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        # utf-8-sig: a spreadsheet's "CSV UTF-8" starts with a byte-order mark.
        stream = opener(path, "rt", encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise program.UsageError(f"input file {path} does not exist.") from None
    name = path[:-3] if path.endswith(".gz") else path
    with stream:
        try:
            if name.endswith((".csv", ".tsv")):
                yield from _table_pairs(stream, path, "\t" if name.endswith(".tsv") else ",")
            else:
                yield from _json_pairs(stream, path)
        except UnicodeDecodeError:
            raise program.UsageError(f"{path} is not valid UTF-8.") from None


def _json_pairs(stream, path):
    position = 0
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        position += 1
        try:
            record = json.loads(line)
            # JSON lines name them as SNLI does first (sentence1), then plainly.
            premise, hypothesis = (_field(record, names[::-1]) for names in COLUMNS.values())
        except (json.JSONDecodeError, TypeError, KeyError) as error:
            raise program.UsageError(f"{path}:{number}: expected a JSON object with "
                                     f"sentence1 and sentence2 (or premise and hypothesis)"
                                     f"{_json_fault(error, line)}.") from None
        yield _checked(path, number, record.get("pairID", position), premise, hypothesis)


def _json_fault(error, line):
    """What a JSON line that holds no pair has instead: the parser's complaint, the keys it
    has, or that it is no object."""
    if isinstance(error, json.JSONDecodeError):
        return f" ({error})"
    if isinstance(error, KeyError):
        keys = list(json.loads(line))
        return f"; it has {', '.join(map(repr, keys)) or 'no keys'}"
    return "; it is no object"


def _field(record, names):
    """The value of the first of `names` a JSON record has (KeyError: none; TypeError: it
    is no object)."""
    if not isinstance(record, dict):
        raise TypeError("not a JSON object")
    for name in names:
        if name in record:
            return record[name]
    raise KeyError(names[0])


def _table_pairs(stream, path, delimiter):
    rows = csv.reader(stream, delimiter=delimiter)
    header = [name.strip() for name in next(rows, [])]
    found = {side: next((header.index(n) for n in names if n in header), None)
             for side, names in COLUMNS.items()}
    if None in found.values():
        raise program.UsageError(
            f"{path}:1: the header must name the columns premise,hypothesis (or sentence1,"
            f"sentence2), optionally pairID; it has "
            f"{', '.join(repr(name) for name in header) or 'nothing'}.")
    pair_id = header.index("pairID") if "pairID" in header else None
    position = 0
    for row in rows:
        number = rows.line_num  # the file's line, also after a quoted cell of several
        if not any(cell.strip() for cell in row):
            continue
        position += 1
        if len(row) < len(header):
            raise program.UsageError(f"{path}:{number}: {len(row)} column(s), the header "
                                     f"has {len(header)}.")
        yield _checked(path, number, row[pair_id] if pair_id is not None else position,
                       row[found["premise"]], row[found["hypothesis"]])


def _checked(path, number, pair_id, premise, hypothesis):
    for side, text in (("premise", premise), ("hypothesis", hypothesis)):
        if not isinstance(text, str):
            raise program.UsageError(f"{path}:{number}: the {side} must be a sentence, got "
                                     f"{json.dumps(text)}.")
        if not text.strip():
            raise program.UsageError(f"{path}:{number}: the {side} is empty; a sentence "
                                     "needs at least one word.")
    return str(pair_id), premise, hypothesis


def batches(pairs, size=CHUNK):
    chunk = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class Writer:
    """Writes predictions as JSON lines or as the pairID,gold_label CSV."""

    def __init__(self, stream, form):
        self.stream, self.form = stream, form
        if form == "csv":
            self.csv = csv.writer(stream, lineterminator="\n")
            self.csv.writerow(["pairID", "gold_label"])

    def write(self, pair_id, premise, hypothesis, label, probabilities, truncated):
        if self.form == "csv":
            self.csv.writerow([pair_id, label])
        else:
            self.stream.write(json.dumps({"pairID": pair_id, "premise": premise,
                                          "hypothesis": hypothesis, "label": label,
                                          "probabilities": probabilities,
                                          "truncated": truncated},
                                         ensure_ascii=False) + "\n")


@contextlib.contextmanager
def output_stream(path):
    """stdout, or `path` written whole or not at all (`atomic.stream`): a failed run
    leaves no file that looks like a valid (empty) submission, and keeps an older `path`
    as it was."""
    if not path:
        yield sys.stdout
        return
    with atomic.stream(path, newline="") as stream:
        yield stream


def predict_all(model, pairs, writer, total, show_progress=True):
    """Classifies `pairs` in batches, writing each prediction; returns (pairs, {side:
    pairs whose side was cut})."""
    count, cut = 0, {"premise": 0, "hypothesis": 0}
    with progress.Progress("predict", total, "pairs", enabled=show_progress) as shown, \
            warnings.catch_warnings():
        # Summed up once, at the end.
        warnings.simplefilter("ignore", dsan_tf.serving.TruncationWarning)
        for chunk in batches(pairs):
            out = model.classify([p for _, p, _ in chunk], [h for _, _, h in chunk])
            sides = {side: out.get(f"{side}_truncated", [0] * len(chunk)) for side in cut}
            for index, (pair_id, premise, hypothesis) in enumerate(chunk):
                truncated = {side: int(values[index]) for side, values in sides.items()}
                writer.write(pair_id, premise, hypothesis, out["labels"][index],
                             dict(zip(out["label_names"],
                                      map(float, out["probabilities"][index]))), truncated)
            for side, values in sides.items():
                cut[side] += int(np.count_nonzero(values))
            count += len(chunk)
            shown.update(len(chunk))
    return count, cut


def check_pair_flags():
    """--premise and --hypothesis, or --input, each sentence given with a word: one
    sentence otherwise, before anything loads."""
    given = [FLAGS[name].present for name in ("premise", "hypothesis")]
    if bool(FLAGS.input) == any(given):
        raise program.UsageError("give either --premise and --hypothesis, or --input=FILE "
                                 "(.jsonl, .csv or .tsv).")
    if not FLAGS.input and not all(given):
        raise program.UsageError("give both --premise and --hypothesis.")
    for name in ("premise", "hypothesis"):
        if not FLAGS.input and not FLAGS[name].value.strip():
            raise program.UsageError(f"--{name} is empty: a sentence needs at least one "
                                     "word.")


@program.main(required={"workdir": program.TRAINED_MODEL}, check=check_pair_flags)
def main(argv):
    total = sum(1 for _ in read_pairs(FLAGS.input)) if FLAGS.input else 1
    if not total:
        raise program.UsageError(f"{FLAGS.input} holds no sentence pairs.")
    pairs = (read_pairs(FLAGS.input) if FLAGS.input
             else iter([("1", FLAGS.premise, FLAGS.hypothesis)]))

    if rundir.is_run_directory(FLAGS.workdir):
        rundir.RunDirectory(FLAGS.workdir).say_if_unfinished()
    try:
        model = dsan_tf.load(FLAGS.workdir, trust_savedmodel=FLAGS.trust_savedmodel)
    except ValueError as error:
        raise program.UsageError(f"--workdir={FLAGS.workdir}: {error}") from None
    started = time.perf_counter()
    with output_stream(FLAGS.output) as stream:
        count, cut = predict_all(model, pairs, Writer(stream, FLAGS.format), total,
                                 show_progress=bool(FLAGS.input))
    if any(cut.values()):
        limit = model.max_length or "the model's maximum number of"
        where = "" if FLAGS.format == "csv" else "; each line's truncated says how many"
        print(f"warning: the model read only the first {limit} tokens of {cut['premise']:,} "
              f"premise(s) and {cut['hypothesis']:,} hypothesis(es) of the {progress.pairs(count)}"
              f"{where}.", file=sys.stderr)
    if FLAGS.input:
        seconds = time.perf_counter() - started
        rate = count / seconds  # the first batch's compile included
        print(f"{progress.pairs(count)} in {seconds:.1f} s "
              f"({rate:,.{0 if rate >= 10 else 1}f} pairs/s "
              f"from raw text){f'; written to {FLAGS.output}' if FLAGS.output else ''}",
              file=sys.stderr)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
