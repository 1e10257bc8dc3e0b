"""`experiments.results`: one command regenerates docs/RESULTS.md, and every row means what it says."""

import gzip
import json

import numpy as np
import pytest

from helpers import ROOT, cli, ok

from experiments import flags as project_flags
from experiments import results, train

WORDS = ("a man woman dog cat sleeps runs eats rests sits is not the person animal "
         "outside inside").split()


def _sentence(rng):
    return " ".join(rng.choice(WORDS, size=rng.integers(3, 7)))


def _shared_data(root):
    """A miniature ../shared/data: the same file names and formats, a few dozen pairs each."""
    rng = np.random.default_rng(0)
    labels = ("entailment", "neutral", "contradiction")
    for spec in [results.CROSS_DOMAIN, *results.TASKS["snli"].values()]:
        path = root / spec
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            for i in range(48):
                stream.write(json.dumps({"sentence1": _sentence(rng), "sentence2": _sentence(rng),
                                         "gold_label": labels[i % 3]}) + "\n")
    for spec in results.TASKS["sick"].values():
        path = root / spec
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        lines += [f"{i}\t{_sentence(rng)}\t{_sentence(rng)}\t3.0\t{labels[i % 3].upper()}"
                  for i in range(48)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    glove = root / results.GLOVE
    glove.parent.mkdir(parents=True, exist_ok=True)
    glove.write_text("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=25))}\n"
                             for w in WORDS), encoding="utf-8")


def test_every_row_trains_a_different_model():
    """A variant whose flags were silently ignored would repeat the paper row under another name."""
    seen = {}
    train.define_flags()  # the rows' flags are experiments.train's
    try:
        for key, _, extra in results.VARIANTS:
            project_flags.FLAGS.unparse_flags()
            project_flags.FLAGS(["results", f"--flagfile={ROOT / results.CONFIG_FILE}", *extra])
            described = (project_flags.FLAGS.model, project_flags.model_config(vocab_size=10))
            assert described not in seen.values(), f"{key} trains the same model as another row"
            seen[key] = described
    finally:
        project_flags.FLAGS.unparse_flags()
    assert seen["dsan"][1].distance_prior == "linear" and seen["dsan"][1].distance_alpha == 1.5


@pytest.mark.slow
def test_table_is_written_resumed_and_reproducible(tmp_path):
    shared, workdir, output = tmp_path / "shared", tmp_path / "runs", tmp_path / "RESULTS.md"
    _shared_data(shared)
    flags = [f"--workdir={workdir}", f"--shared_data={shared}", f"--output={output}",
             "--variants=dsan", "--variants=cbow"]
    ok(cli("results", *flags))
    text = output.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    assert [row.split("(`")[1].split("`")[0] for row in rows] == ["dsan", "cbow"]
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert "–" not in cells, row  # every accuracy and timing was measured
        for accuracy in cells[2:5]:
            assert 0.0 <= float(accuracy) <= 100.0
    assert f"--workdir={workdir}/snli/dsan" in text and "experiments.evaluate" in text
    mnli = json.loads((workdir / "snli" / "cbow" / "multinli_dev_matched.json").read_text())
    assert next(iter(mnli["sources"].values()))["examples"] == 48

    # A second invocation reuses the finished runs instead of training again.
    log = workdir / "sick" / "dsan" / "train.log"
    before = log.stat().st_mtime_ns
    ok(cli("results", *flags))
    assert log.stat().st_mtime_ns == before
    assert output.read_text() == text


@pytest.mark.parametrize("flags, message", [
    (["--variants=transformer"], "unknown --variants ['transformer']"),
    (["--shared_data=/nonexistent"], "point --shared_data at the shared data directory"),
])
def test_mistakes_get_one_sentence(tmp_path, flags, message):
    if "unknown" in message and not (ROOT.parent / "shared" / "data").exists():
        pytest.skip("../shared/data is absent")
    result = cli("results", f"--workdir={tmp_path}", "--shared_data=../shared/data", *flags)
    assert result.returncode != 0 and message in result.stderr
    assert "Traceback" not in result.stderr
