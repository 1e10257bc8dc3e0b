"""Reading NLI data: counts on the real files, and one clear sentence for every bad input."""

import gzip
import json
import pathlib

import pytest

from dsan_tf.data import DataError, read_examples

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.parametrize("name, kept, dropped", [
    ("snli/snli_1.0_dev.jsonl.gz", 9_842, 158),
    ("snli/snli_1.0_train_0.01.jsonl.gz", 5_498, 4),
    ("multinli/multinli_1.0_dev_matched.jsonl.gz", 9_815, 0),
    ("sick/SICK_train.txt", 4_500, 0),
    ("sick/SICK_trial.txt", 500, 0),
    ("sick/SICK_test_annotated.txt", 4_927, 0),
])
def test_shared_data_counts(name, kept, dropped):
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    examples, report = read_examples(str(path))
    assert (len(examples), report.kept, sum(report.dropped.values())) == (kept, kept, dropped)
    assert {e.label for e in examples} == {0, 1, 2}
    assert all(e.premise.strip() and e.hypothesis.strip() for e in examples)


def test_sick_test_labels_and_crlf():
    path = SHARED / "sick" / "SICK_test_annotated.txt"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    examples, _ = read_examples(str(path))
    counts = [sum(e.label == i for e in examples) for i in range(3)]
    assert counts == [1_414, 2_793, 720]
    assert not any(e.hypothesis.endswith("\r") for e in examples)


def jsonl(path, records, compress=False):
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            stream.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def pair(label, s1="A man sleeps.", s2="A person rests."):
    return {"sentence1": s1, "sentence2": s2, "gold_label": label, "pairID": "x"}


@pytest.mark.parametrize("compress", [False, True])
def test_snli_jsonl_labels_and_counted_drops(tmp_path, compress):
    name = "data.jsonl.gz" if compress else "data.jsonl"
    path = jsonl(tmp_path / name, [pair("entailment"), pair("-"), pair("neutral"),
                                   pair("contradiction", s2="   "), pair("contradiction"), ""],
                 compress=compress)
    examples, report = read_examples(path)
    assert [e.label for e in examples] == [0, 1, 2]
    assert report.dropped == {"no gold label": 1, "empty sentence": 1}
    assert "3 examples, 2 dropped (empty sentence: 1, no gold label: 1)" in report.summary()


def test_sick_tsv_with_crlf_and_capital_labels(tmp_path):
    path = tmp_path / "SICK_mini.txt"
    path.write_bytes(b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
                     b"1\tA dog runs\tAn animal runs\t4.5\tENTAILMENT\r\n"
                     b"2\tA dog runs\tNo dog runs\t3.1\tCONTRADICTION\r\n")
    examples, _ = read_examples(str(path))
    assert [(e.hypothesis, e.label) for e in examples] == [("An animal runs", 0), ("No dog runs", 2)]


@pytest.mark.parametrize("content, message", [
    ('{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}\n{"sentence1": "a",\n',
     r"data.jsonl:2: malformed JSON"),
    ('{"sentence1": "a", "gold_label": "neutral"}\n', r"data.jsonl:1: missing field 'sentence2'"),
    ('{"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}\n',
     r"data.jsonl:1: unknown label 'maybe'"),
])
def test_malformed_lines_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "data.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_examples(str(path))


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
def test_every_malformed_line_is_reported_in_one_pass(tmp_path, suffix):
    """A long file with bad lines deep inside: one read reports them all (the first 20,
    each with its line, and how many more), not one per read."""
    path = tmp_path / f"data{suffix}"
    good = json.dumps(pair("neutral")) if suffix == ".jsonl" else "a\tb\tneutral"
    bad = "{not json" if suffix == ".jsonl" else "a\tb"
    lines = [good] * 3000
    for number in range(100, 3000, 100):  # 29 bad lines
        lines[number] = bad
    lines[2550] = "\xff"  # raw bytes below: not UTF-8
    header = [] if suffix == ".jsonl" else ["sentence1\tsentence2\tgold_label"]
    content = "\n".join(header + lines).encode().replace("\xff".encode(), b"\xff")
    path.write_bytes(content + b"\n")
    with pytest.raises(DataError) as raised:
        read_examples(str(path))
    shown = str(raised.value).splitlines()
    assert shown[0] == f"{path} has 30 malformed lines; fix or remove them:"
    offset = len(header) + 1
    assert shown[1].startswith(f"  {path}:{100 + offset}: ")
    assert len(shown) == 22 and shown[-1] == "  ... and 10 more."


def test_the_plain_field_names_and_a_byte_order_mark_are_read(tmp_path):
    """JSON lines with premise/hypothesis/label (what predict reads) are read as SNLI's
    sentence1/sentence2/gold_label; a spreadsheet's CSV starts with a byte-order mark."""
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"premise": "a b", "hypothesis": "c", "label": "neutral"}\n')
    excel = tmp_path / "excel.csv"
    excel.write_text("\ufeffpremise,hypothesis,label\na b,c,neutral\n", encoding="utf-8")
    for path in (plain, excel):
        (example,), _ = read_examples(str(path))
        assert (example.premise, example.hypothesis, example.label) == ("a b", "c", 1)


def test_non_utf8_bytes_name_the_line(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(json.dumps(pair("neutral")).encode() + b"\n" + b'{"sentence1": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"data.jsonl:2: not valid UTF-8"):
        read_examples(str(path))


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_examples(str(tmp_path / "nope.jsonl"))
    (tmp_path / "data.xlsx").write_text("a,b,c\n")
    with pytest.raises(DataError, match="unknown data format of .*data.xlsx"):
        read_examples(str(tmp_path / "data.xlsx"))
    (tmp_path / "plain.jsonl.gz").write_text("{}\n")
    with pytest.raises(DataError, match="plain.jsonl.gz is not a valid gzip file"):
        read_examples(str(tmp_path / "plain.jsonl.gz"))
    (tmp_path / "bad.tsv").write_text("x\ty\n1\t2\n")
    with pytest.raises(DataError) as raised:
        read_examples(str(tmp_path / "bad.tsv"))
    assert str(raised.value) == (
        f"{tmp_path / 'bad.tsv'}:1: the header must name a premise and a hypothesis and a "
        "label column (premise: sentence1 or sentence_A or premise; hypothesis: sentence2 or "
        "sentence_B or hypothesis; label: gold_label or entailment_judgment or label); it "
        "has x,y.")
    (tmp_path / "short.tsv").write_text("sentence1\tsentence2\tgold_label\na\tb\n")
    with pytest.raises(DataError, match="short.tsv:2: expected 3 tab-separated fields, found 2"):
        read_examples(str(tmp_path / "short.tsv"))


def test_tfds_source_offline_with_mock_data():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=12):
        examples, report = read_examples("tfds:snli/validation")
    assert report.kept == len(examples) == 12 - sum(report.dropped.values())
    assert all(e.label in (0, 1, 2) and isinstance(e.premise, str) for e in examples)


def test_tfds_failure_says_what_to_do(monkeypatch):
    tfds = pytest.importorskip("tensorflow_datasets")
    from dsan_tf.data import sources

    def offline(*args, **kwargs):
        raise ConnectionError("Failed to resolve 'nlp.stanford.edu'")

    monkeypatch.setattr(tfds, "load", offline)
    monkeypatch.setattr(sources, "_reachable", lambda url, timeout=10.0: None)
    with pytest.raises(DataError, match=r"could not load TFDS dataset snli/train .*"
                                        r"give the local file where tfds:snli/train was "
                                        r"given, e\.g\. snli_1\.0/snli_1\.0_train\.jsonl"):
        read_examples("tfds:snli/train")
    # Whichever flag named it (evaluate's --data, say): no flag of another program.
    with pytest.raises(DataError) as raised:
        read_examples("tfds:snli/validation")
    assert "--train_data" not in str(raised.value) and "snli_1.0_validation.jsonl" in \
        str(raised.value)
    with pytest.raises(DataError, match="must look like tfds:NAME/SPLIT"):
        read_examples("tfds:snli")


def test_tfds_without_internet_says_so_at_once(monkeypatch, tmp_path):
    """Offline, a dataset TFDS has not prepared is refused in one sentence that names the
    download and the local-file alternative, before TFDS's minutes of retries, and leaves
    no TFDS directory behind."""
    tfds = pytest.importorskip("tensorflow_datasets")
    from dsan_tf.data import sources

    asked = []
    monkeypatch.setattr(sources, "_reachable",
                        lambda url, timeout=10.0: asked.append(url) or "Connection refused")
    monkeypatch.setattr(tfds, "load", lambda *a, download=True, **k: (_ for _ in ()).throw(
        AssertionError("no data") if not download else RuntimeError("must not download")))
    with pytest.raises(DataError) as refused:
        read_examples("tfds:snli/train", tfds_data_dir=str(tmp_path / "tfds"))
    message = str(refused.value)
    assert "needs internet" in message and "Connection refused" in message
    assert "give the local file where tfds:snli/train was given" in message and asked == [
        "https://nlp.stanford.edu/projects/snli/snli_1.0.zip"]
    assert not (tmp_path / "tfds").exists()


def test_generated_word_order_task_needs_no_download():
    train, report = read_examples("synthetic:word_order/train")
    dev, _ = read_examples("synthetic:word_order/dev")
    every, _ = read_examples("synthetic:word_order/all")
    assert len(train) + len(dev) == len(every) == report.kept + len(dev) == 840
    assert not {e.premise for e in train} & {e.premise for e in dev}
    with pytest.raises(DataError, match="expected synthetic:word_order/SPLIT"):
        read_examples("synthetic:word_order/test")


def test_the_tables_predict_reads_are_read_with_their_labels(tmp_path):
    """Evaluate refused the .csv and premise,hypothesis .tsv files that
    predict reads. With a label column they are data: CSV quoting (commas and line breaks
    inside a cell), a pairID kept, a file without labels refused naming the column."""
    table = tmp_path / "pairs.csv"
    table.write_text('pairID,premise,hypothesis,label\n'
                     'a1,"A man, tall, walks.",A person walks.,entailment\n'
                     'a2,A dog runs.,"A cat\nsleeps.",Contradiction\n\n'
                     'a3,Kids play.,Kids are outside.,-\n')
    examples, report = read_examples(str(table))
    assert [(e.premise, e.hypothesis, e.label, e.fields) for e in examples] == [
        ("A man, tall, walks.", "A person walks.", 0, (("pairID", "a1"),)),
        ("A dog runs.", "A cat\nsleeps.", 2, (("pairID", "a2"),))]
    assert report.summary() == f"{table}: 2 examples, 1 dropped (no gold label: 1)"
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text('premise\thypothesis\tlabel\nHe said "hi".\tHe spoke.\tneutral\n')
    examples, report = read_examples(str(tsv))
    assert (examples[0].premise, examples[0].label) == ('He said "hi".', 1)
    assert report.summary() == f"{tsv}: 1 example"
    bare = tmp_path / "bare.csv"
    bare.write_text("premise,hypothesis\nA,B\n")
    with pytest.raises(DataError, match=r"bare.csv:1: the header must name a label column "
                       r"\(label: gold_label or entailment_judgment or label\); it has "
                       r"premise,hypothesis\."):
        read_examples(str(bare))
    short = tmp_path / "short.csv"
    short.write_text("premise,hypothesis,label\nA,B\n")
    with pytest.raises(DataError, match="short.csv:2: expected 3 comma-separated fields, "
                       "found 2"):
        read_examples(str(short))
