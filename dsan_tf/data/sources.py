"""Reading labelled NLI examples from local files or TFDS: the first step of the data flow.

A *source spec* names data the same way in flags, configs and Python:
  - a local file: SNLI 1.0 / MultiNLI 1.0 `.jsonl` or `.jsonl.gz` (fields `sentence1`,
    `sentence2`, `gold_label`), or a tab-separated `.txt` / `.tsv` (optionally `.gz`) with a
    header row: SICK (`sentence_A`, `sentence_B`, `entailment_judgment`) or SNLI's own
    `.txt` release (`sentence1`, `sentence2`, `gold_label`);
  - a TFDS dataset: `tfds:NAME/SPLIT`, e.g. `tfds:snli/train`,
    `tfds:multi_nli/validation_matched`;
  - the project's generated word-order task: `synthetic:word_order/SPLIT` (SPLIT: all,
    train, dev), which needs no download (`dsan_tf.data.synthetic`).

Nothing is dropped silently: every dropped example is counted, by reason, in a `ReadReport`.
Malformed input raises `DataError` with one sentence naming the file and line.
"""

import collections
import contextlib
import csv
import dataclasses
import gzip
import json
import logging
import os
import shutil
import zlib

from dsan_tf.data import synthetic
from dsan_tf.data.examples import DataError, Example  # noqa: F401  (Example: re-exported)
from dsan_tf.common.labels import LABEL_IDS, LABELS, NON_ENTAILMENT, NON_ENTAILMENT_ID

TFDS_PREFIX = "tfds:"
SYNTHETIC_PREFIX = "synthetic:"
NO_GOLD_LABEL = "no gold label"
EMPTY_SENTENCE = "empty sentence"
# A table's columns, each by any of its names: SNLI/MultiNLI's .txt, SICK's, and the
# premise,hypothesis,label files that `predict` reads (with a label).
_TABLE_COLUMNS = {"premise": ("sentence1", "sentence_A", "premise"),
                  "hypothesis": ("sentence2", "sentence_B", "hypothesis"),
                  "label": ("gold_label", "entailment_judgment", "label")}


@dataclasses.dataclass
class ReadReport:
    """What reading a source kept and dropped, and why."""

    source: str
    kept: int = 0
    dropped: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def to_dict(self):
        """{"source", "kept", "dropped": {reason: count}}: numbers, for JSON reports."""
        return {"source": self.source, "kept": self.kept,
                "dropped": dict(sorted(self.dropped.items()))}

    def summary(self):
        text = f"{self.source}: {self.kept:,} example{'' if self.kept == 1 else 's'}"
        if self.dropped:
            reasons = ", ".join(f"{reason}: {count:,}" for reason, count
                                in sorted(self.dropped.items()))
            text += f", {sum(self.dropped.values()):,} dropped ({reasons})"
        return text


def read_examples(spec, tfds_data_dir=None):
    """Reads the labelled examples a source spec names.

    Args:
        spec: a local file path or `tfds:NAME/SPLIT`.
        tfds_data_dir: optional TFDS data directory.

    Returns:
        (list of `Example`, `ReadReport`). Label ids: entailment 0, neutral 1, contradiction 2.

    Raises:
        DataError: missing file, unknown format, malformed line, unknown label, failed download.
    """
    report = ReadReport(source=spec)
    faults = []  # every malformed line, reported together after one pass
    if spec.startswith(TFDS_PREFIX):
        records = _tfds_records(spec[len(TFDS_PREFIX):], tfds_data_dir)
    elif spec.startswith(SYNTHETIC_PREFIX):
        records = _synthetic_records(spec[len(SYNTHETIC_PREFIX):])
    else:
        records = _file_records(spec, faults)
    examples = []
    for where, premise, hypothesis, label, extra in records:
        try:
            _check_types(where, premise, hypothesis, label)
            label_id = _label_id(label, where)
        except DataError as error:
            faults.append(str(error))
            continue
        if label_id is None:
            report.dropped[NO_GOLD_LABEL] += 1
        elif not premise.strip() or not hypothesis.strip():
            report.dropped[EMPTY_SENTENCE] += 1
        else:
            examples.append(Example(premise, hypothesis, label_id,
                                    tuple(sorted(extra.items()))))
    if faults:
        raise DataError(_faults_message(spec, faults))
    report.kept = len(examples)
    return examples, report


SHOWN_FAULTS = 20


def _faults_message(spec, faults):
    """One malformed line's sentence; for several, their count and the first
    `SHOWN_FAULTS`, a line each."""
    if len(faults) == 1:
        return faults[0]
    more = len(faults) - SHOWN_FAULTS
    return (f"{spec} has {len(faults):,} malformed lines; fix or remove them:\n  "
            + "\n  ".join(faults[:SHOWN_FAULTS])
            + (f"\n  ... and {more:,} more." if more > 0 else ""))


def _check_types(where, premise, hypothesis, label):
    """`DataError` naming the record when a sentence is no string or a label no name (a
    number or null in a .jsonl file, say); integer labels come from TFDS."""
    def shown(value):
        return json.dumps(value) if isinstance(value, (int, float, list, dict, type(None))) \
            else repr(value)
    for side, value in (("premise (sentence1)", premise), ("hypothesis (sentence2)", hypothesis)):
        if not isinstance(value, str):
            raise DataError(f"{where}: the {side} must be a sentence, got {shown(value)}.")
    if isinstance(label, bool) or not isinstance(label, (str, int)):
        raise DataError(f"{where}: gold_label must be a label name such as "
                        f"{LABELS[0]!r}, got {shown(label)}.")


def _label_id(label, where):
    if isinstance(label, int):
        if label >= len(LABELS):  # TFDS's ids: 0 to 2, -1 for no gold label
            raise DataError(f"{where}: label id {label} is no class; expected 0 to "
                            f"{len(LABELS) - 1} ({', '.join(LABELS)}), -1 (no gold label) "
                            "or a label name.")
        return label if label >= 0 else None
    label = label.strip().lower()
    if label in ("-", ""):
        return None
    if label == NON_ENTAILMENT:
        return NON_ENTAILMENT_ID
    if label not in LABEL_IDS:
        raise DataError(f"{where}: unknown label {label!r}; expected one of "
                        f"{', '.join(LABELS)}, {NON_ENTAILMENT} (two-way sets such as HANS) "
                        "or '-' (no gold label).")
    return LABEL_IDS[label]


def _extra(record, used):
    """The record's other string fields (pairID, genre, heuristic, category, ...); parse
    trees are left out."""
    return {name: value for name, value in record.items()
            if name not in used and isinstance(value, str) and "parse" not in name}


def _lines(path, faults):
    """Yields (line number, text) of a UTF-8 file, plain or gzipped, any line ending; a
    line that is not UTF-8 is added to `faults` instead."""
    opener = gzip.open if path.endswith(".gz") else open
    number = 0
    try:
        with opener(path, "rb") as stream:
            for number, raw in enumerate(stream, start=1):
                try:
                    text = raw.decode("utf-8").rstrip("\r\n")
                    if number == 1:  # a spreadsheet's "CSV UTF-8" starts with a BOM
                        text = text.removeprefix("\ufeff")
                except UnicodeDecodeError as error:
                    faults.append(f"{path}:{number}: not valid UTF-8 (byte {error.start}); "
                                  "convert the file to UTF-8.")
                    continue
                yield number, text
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise DataError(f"{path} is not a valid gzip file (after line {number}: "
                        f"{error}).") from None


def _file_records(path, faults):
    """The records of a local file; a malformed line is added to `faults` instead."""
    if not os.path.isfile(path):
        raise DataError(f"data file {path} does not exist.")
    name = path[:-3] if path.endswith(".gz") else path
    if name.endswith(".jsonl"):
        return _jsonl_records(path, faults)
    if name.endswith((".txt", ".tsv", ".csv")):
        return _table_records(path, "," if name.endswith(".csv") else "\t", faults)
    raise DataError(f"unknown data format of {path}: expected .jsonl or .jsonl.gz "
                    "(SNLI/MultiNLI), tab-separated .txt/.tsv (SICK, SNLI), .csv, "
                    "tfds:NAME/SPLIT or synthetic:word_order/SPLIT.")


def _jsonl_records(path, faults):
    for number, line in _lines(path, faults):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            # json's msg alone can end mid-phrase ("Unterminated string starting at").
            faults.append(f"{path}:{number}: malformed JSON ({error.msg}: column "
                          f"{error.colno}).")
            continue
        # SNLI's names first, then the plain ones that predict and the CSV reader take.
        names = [next((name for name in _TABLE_COLUMNS[column][::2] if name in record), None)
                 if isinstance(record, dict) else None for column in _TABLE_COLUMNS]
        if None in names:
            column = list(_TABLE_COLUMNS)[names.index(None)]
            first, _, plain = _TABLE_COLUMNS[column]
            faults.append(f"{path}:{number}: missing field {first!r} (or {plain!r}).")
            continue
        yield (f"{path}:{number}", *(record[name] for name in names), _extra(record, names))


def _table_records(path, delimiter, faults):
    """Records of a table with a header: tab-separated lines as they are (SNLI's text has
    quotes in it), or CSV with its quoting."""
    lines = _lines(path, faults)
    rows = ((number, line.split("\t")) for number, line in lines) if delimiter == "\t" else \
        _csv_rows(lines)
    try:
        _, fields = next(rows)
    except StopIteration:
        raise DataError(f"{path} is empty.") from None
    fields = [field.strip() for field in fields]
    found = {column: next((fields.index(n) for n in names if n in fields), None)
             for column, names in _TABLE_COLUMNS.items()}
    missing = [column for column, index in found.items() if index is None]
    if missing:
        raise DataError(f"{path}:1: the header must name a {' and a '.join(missing)} column ("
                        + "; ".join(f"{column}: {' or '.join(names)}" for column, names in
                                    _TABLE_COLUMNS.items() if column in missing)
                        + f"); it has {','.join(fields) or 'nothing'}.")
    names = [fields[found[column]] for column in ("premise", "hypothesis", "label")]
    for number, values in rows:
        if not any(value.strip() for value in values):
            continue
        if len(values) != len(fields):
            kind = "tab-separated" if delimiter == "\t" else "comma-separated"
            faults.append(f"{path}:{number}: expected {len(fields)} {kind} fields, "
                          f"found {len(values)}.")
            continue
        premise, hypothesis, label = (values[found[c]] for c in ("premise", "hypothesis",
                                                                  "label"))
        yield (f"{path}:{number}", premise, hypothesis, label,
               _extra(dict(zip(fields, values)), names))


def _csv_rows(lines):
    """(line number, cells) of CSV lines (a quoted cell may hold a line break: the number
    is its row's first line)."""
    # The line break _lines took is given back: a quoted cell keeps it.
    reader = csv.reader(line + "\n" for _, line in lines)
    first = 1
    for row in reader:
        yield first, row
        first = reader.line_num + 1


def _synthetic_records(name_and_split):
    name, _, split = name_and_split.partition("/")
    if name != "word_order" or split not in synthetic.SPLITS:
        raise DataError(f"unknown generated data synthetic:{name_and_split}; expected "
                        f"synthetic:word_order/SPLIT with SPLIT one of {synthetic.SPLITS}.")
    for number, example in enumerate(synthetic.word_order_pairs(split), start=1):
        yield (f"synthetic:{name_and_split}#{number}", example.premise, example.hypothesis,
               example.label, {})


def _reachable(url, timeout=10.0):
    """None if `url`'s server answers within `timeout` seconds (through any proxy the
    environment names), else why not."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout)
    except urllib.error.HTTPError:
        return None  # the server answered
    except (OSError, ValueError) as error:
        return str(getattr(error, "reason", error))
    return None


def _tfds_download(tfds, name, split, data_dir):
    """Downloads and prepares a TFDS dataset that is not in `data_dir`, after checking in
    seconds that its files can be reached (TFDS itself retries for minutes offline); a
    failure leaves no TFDS directory that was not there before."""
    spec = f"tfds:{name}/{split}"
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception as error:  # noqa: BLE001  (unknown name, bad config)
        raise DataError(f"unknown TFDS dataset in {spec} ({type(error).__name__}: "
                        f"{_first_line(error)}).") from None
    # No flag named: the same spec may come from --train_data, --dev_data or --data.
    local = (f"instead, download the official files and give the local file where {spec} "
             f"was given, e.g. snli_1.0/snli_1.0_{split}.jsonl")
    for url in list(builder.url_infos or {})[:1]:
        reason = _reachable(url)
        if reason:
            raise DataError(f"{spec} is not in TFDS's data directory "
                            f"({builder.data_dir}) and needs internet to download it from "
                            f"{url}, which could not be reached ({reason}); {local}.")
    root = data_dir or os.environ.get("TFDS_DATA_DIR") or os.path.expanduser(
        "~/tensorflow_datasets")
    existed = os.path.exists(root)
    try:
        return tfds.load(name, split=split, data_dir=data_dir, with_info=True)
    except Exception as error:  # noqa: BLE001  (network, missing files, bad split: all one answer)
        if not existed:
            shutil.rmtree(root, ignore_errors=True)
        raise DataError(f"could not load TFDS dataset {name}/{split} ({type(error).__name__}: "
                        f"{_first_line(error)}); {local}.") from None


@contextlib.contextmanager
def _absl_errors_only():
    """absl's Python logger shows errors only while the block runs (TFDS logs a warning
    for each dataset it looks for and does not find)."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _first_line(error):
    return str(error).strip().splitlines()[0][:200] if str(error).strip() else ""


def _tfds_records(name_and_split, data_dir):
    name, _, split = name_and_split.rpartition("/")
    if not name or not split:
        raise DataError(f"TFDS spec tfds:{name_and_split} must look like tfds:NAME/SPLIT, "
                        "e.g. tfds:snli/train.")
    import tensorflow_datasets as tfds  # slow to import; only TFDS users pay for it

    try:  # prepared already (or mocked: tfds.testing.mock_data)
        with _absl_errors_only():  # not "Variant folder ... has no dataset_info.json"
            dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True,
                                      download=False)
    except Exception:  # noqa: BLE001  (not prepared here, unknown name, bad split)
        dataset, info = _tfds_download(tfds, name, split, data_dir)
    names = info.features["label"].names
    to_ours = {index: LABEL_IDS[label] for index, label in enumerate(names)}
    for number, record in enumerate(tfds.as_numpy(dataset), start=1):
        label = int(record["label"])
        yield (f"tfds:{name}/{split}#{number}", record["premise"].decode("utf-8"),
               record["hypothesis"].decode("utf-8"), to_ours.get(label, -1), {})
