"""What a user of the Python API sees: one string or a list, truncation reported, no
spurious warnings, progress lines, readable figures, honest log lines."""

import io
import warnings

import numpy as np
import pytest

from dsan_tf import DSANConfig, build_model
from dsan_tf.common import progress
from dsan_tf.data import NLIPreprocessor, Vocabulary
from dsan_tf.evaluation import plots
from dsan_tf.saving.serving import TruncationWarning

WORDS = ["the", "dog", "cat", "saw", "a"]


@pytest.fixture(scope="module")
def loaded():
    """A small untrained DSAN with its preprocessor, reading at most 6 tokens a sentence."""
    vocabulary = Vocabulary(WORDS, lowercase=True)
    preprocessor = NLIPreprocessor(vocabulary, max_length=6)
    model = build_model("dsan", DSANConfig(vocab_size=vocabulary.size, embedding_dim=8,
                                           num_heads=2, ffn_dim=16, classifier_units=8))
    model.preprocessor = preprocessor
    return model


def test_one_string_is_one_pair_not_a_list_of_characters(loaded):
    one = loaded.classify("the dog saw a cat", "a cat saw the dog")
    listed = loaded.classify(["the dog saw a cat"], ["a cat saw the dog"])
    assert one["probabilities"].shape == (1, 3) and len(one["labels"]) == 1
    np.testing.assert_allclose(one["probabilities"], listed["probabilities"], atol=1e-6)
    assert loaded.encode("the dog").shape == (1, 4 * 8)
    assert loaded.encode(("the dog", "a cat")).shape == (2, 4 * 8)


@pytest.mark.parametrize("premises,hypotheses,message", [
    ("the dog", ["a cat", "the cat"], r"both as strings \(one pair\) or both as lists"),
    (["the dog", "a dog"], ["a cat"], "2 premises but 1 hypotheses"),
    (["the dog", 3], ["a", "b"], r"premises\[1\] is int, not a string"),
    (5, "a", "premises must be a string or a list of strings"),
])
def test_bad_combinations_get_one_sentence(loaded, premises, hypotheses, message):
    with pytest.raises(ValueError, match=message) as raised:
        loaded.classify(premises, hypotheses)
    assert "\n" not in str(raised.value)


def test_truncation_is_reported_and_cut_pairs_read_their_first_tokens(loaded):
    long = "the dog saw a cat and the cat saw a dog"  # 11 tokens, 5 beyond max_length 6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = loaded.classify([long, "the dog"], ["a cat", long])
    assert out["premise_truncated"].tolist() == [5, 0]
    assert out["hypothesis_truncated"].tolist() == [0, 5]
    cut = [w for w in caught if issubclass(w.category, TruncationWarning)]
    assert len(cut) == 1 and "2 of 2 pairs were longer than 6 tokens" in str(cut[0].message)
    first = loaded.classify(["the dog saw a cat and", "the dog"], ["a cat", "the dog saw a cat and"])
    np.testing.assert_allclose(out["probabilities"], first["probabilities"], atol=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vectors, truncated = loaded.encode([long, "a cat"], return_truncated=True)
    assert truncated.tolist() == [5, 0] and vectors.shape == (2, 32)
    assert [str(w.message).split(" were")[0] for w in caught] == ["1 of 2 sentences"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing cut: no warning
        loaded.classify("the dog", "a cat")


def test_one_word_sentences_raise_no_softmax_warning(loaded):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded.classify(["dog"], ["cat"])
        loaded.encode(["dog"])
    assert not [w for w in caught if "softmax" in str(w.message)]


def test_progress_in_a_log_file_is_bounded_and_complete(monkeypatch):
    stream = io.StringIO()  # not a terminal
    monkeypatch.setenv("DSAN_PROGRESS_SECONDS", "3600")
    with progress.Progress("evaluate dev", 300, "pairs", stream=stream) as shown:
        for _ in range(3):
            shown.update(100)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate dev: 300/300 pairs (100%), ")
    assert "pairs/s, took 0:00:0" in lines[0]
    monkeypatch.setenv("DSAN_PROGRESS_SECONDS", "0")
    stream = io.StringIO()
    with progress.Progress("predict", 200, "pairs", stream=stream) as shown:
        shown.update(50, loss=0.5)
        shown.update(150)
    first, *_ = stream.getvalue().splitlines()
    assert first.startswith("predict: 50/200 pairs (25%), ") and "ETA 0:" in first
    assert first.endswith("loss 0.5000")


def test_training_progress_counts_steps_when_a_call_runs_several(monkeypatch, capsys):
    """Keras calls the batch callbacks once per `steps_per_execution` steps, with the
    execution's last step: the progress counts every step, not every call."""
    from dsan_tf.training.callbacks import EvaluationProgress, TrainingProgress

    monkeypatch.setenv("DSAN_PROGRESS_SECONDS", "3600")
    shown = TrainingProgress(1, 70, 10)
    shown.on_epoch_begin(0)
    for last in (31, 63, 69):  # 32 steps a call, 6 at the epoch's end
        shown.on_train_batch_end(last, {"loss": 0.5})
    shown.on_test_begin()
    for last in (7, 9):
        shown.on_test_batch_end(last)
    shown.on_test_end()
    alone = EvaluationProgress("best model on dev", 10)
    alone.on_test_begin()
    for last in (7, 9):
        alone.on_test_batch_end(last)
    alone.on_test_end()
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (100%)")[0] for line in lines] == [
        "epoch 1/1, training: 70/70 steps", "epoch 1/1, dev: 10/10 batches",
        "best model on dev: 10/10 batches"]


def test_length_buckets_under_the_minimum_are_merged_with_their_neighbours():
    buckets = [{"min_length": 5 * i, "max_length": 5 * i + 5, "examples": n, "accuracy": a}
               for i, (n, a) in enumerate([(3, 1.0), (400, 0.8), (900, 0.7), (20, 0.5),
                                           (2, 0.0), (1, 1.0)])]
    merged = plots.merge_small_buckets(buckets, minimum=50)
    assert all(b["examples"] >= 50 for b in merged)
    assert sum(b["examples"] for b in merged) == sum(b["examples"] for b in buckets)
    assert [(b["min_length"], b["max_length"]) for b in merged] == [(0, 10), (10, 30)]
    assert merged[1]["accuracy"] == pytest.approx((900 * 0.7 + 20 * 0.5 + 1) / 923)


def test_figures_have_titles_colour_bars_and_plain_labels():
    rng = np.random.default_rng(0)
    tokens = ["a", "dog", "runs"]
    attention = rng.dirichlet(np.ones(3), size=(2, 3))  # [H, T, T], rows sum to 1
    analysis = {"forward_attention": attention, "backward_attention": attention,
                "forward_gate": rng.random((3, 4)), "forward_inactive_relu": rng.random(3),
                "backward_inactive_relu": rng.random(3), "forward_output_max": rng.random(3),
                "backward_output_max": rng.random(3), "max_pool_share": rng.random(3),
                "s2t_weights": rng.random((3, 4))}
    figures = plots.sentence_figures(tokens, analysis, "a dog runs")
    maps = figures["fig07_attention"]
    bars = [axis for axis in maps.axes if axis.get_label() == "<colorbar>"]
    assert len(bars) == 1 and bars[0].get_ylabel() == "attention weight (0-1)"
    for stem in ("fig09_fusion_gate", "fig10_ffn", "fig11_pooling"):
        axes = figures[stem].axes
        assert all(axis.get_title() for axis in axes), stem
        assert not any("(fw)" in axis.get_ylabel() or "(bw)" in axis.get_ylabel()
                       for axis in axes), stem
        assert figures[stem].get_suptitle(), stem
    figure = plots.accuracy_by_length({"demo on snli_1.0_dev": [
        {"min_length": 0, "max_length": 5, "examples": 3, "accuracy": 1.0},
        {"min_length": 5, "max_length": 10, "examples": 300, "accuracy": 0.5}]})
    top, counts = figure.axes
    assert counts.get_ylabel() == "pairs per point"
    assert [round(y) for y in top.lines[0].get_ydata()] == [50]  # 3 pairs merged into 300
    assert figure.legends[0].get_texts()[0].get_text() == "demo on snli_1.0_dev"


def test_vocabulary_log_line_says_only_what_was_asked():
    from dsan_tf.core.task import vocabulary_summary

    line = vocabulary_summary(1000, {"from_data": 12, "from_vectors": 0}, True, 0)
    assert line == "vocabulary: 1,000 training words and 12 more dev/test words that have a vector"
    assert "first 0" not in line


QUIET = """
import sys
if sys.argv[1] == "module":
    from dsan_tf.models import preset          # a module that imports Keras itself
else:
    from dsan_tf.data import Vocabulary        # TensorFlow's strings, by the data package
import dsan_tf
print(dsan_tf.load("dsan_snli25k_glove50").classify("A man sleeps.", "A person rests.")["labels"])
"""


def test_python_use_and_an_export_write_nothing_to_stderr(demo, tmp_path):
    """Quiet means quiet on a machine without a GPU, as a user runs it (no
    TF_CPP_MIN_LOG_LEVEL of their own): imports of the package's modules, a preset's
    prediction and `dsan-export` of a run write no TensorFlow start-up line, no CUDA
    probe and no AutoGraph warning; only the program's one result line."""
    import os
    import subprocess
    import sys

    from helpers import ROOT, command

    env = {key: value for key, value in os.environ.items()
           if key not in ("TF_CPP_MIN_LOG_LEVEL", "DSAN_TF_VERBOSE")}
    for first in ("module", "package"):
        used = subprocess.run([sys.executable, "-c", QUIET, first], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert used.returncode == 0 and used.stdout.strip() == "['entailment']", used.stderr
        assert used.stderr == "", first
    workdir, _ = demo
    exported = subprocess.run(command("export", f"--workdir={workdir}",
                                      f"--export_dir={tmp_path / 'export'}"),
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == "" and exported.stdout.count("\n") == 1, exported.stderr


def test_figure_6_puts_a_merged_bucket_where_its_pairs_are_and_spans_its_lengths():
    """A bucket merged from [10, 15) (300 pairs) and [15, 25) (10 pairs) is drawn at its
    pairs' mean length (12.7), not at the middle of [10, 25), with a bar over 10 to 25; the
    pair counts below cover each merged range."""
    figure = plots.accuracy_by_length({"run": [
        {"min_length": 0, "max_length": 10, "examples": 400, "accuracy": 0.8},
        {"min_length": 10, "max_length": 15, "examples": 300, "accuracy": 0.6},
        {"min_length": 15, "max_length": 25, "examples": 10, "accuracy": 0.1}]}, minimum=50)
    top, counts = figure.axes
    centres = list(top.lines[0].get_xdata())
    assert centres[0] == 5 and centres[1] == pytest.approx((300 * 12.5 + 10 * 20) / 310)
    spans = [segment for collection in top.collections for segment in collection.get_segments()]
    assert [(round(s[0][0], 6), round(s[1][0], 6)) for s in spans] == [(0, 10), (10, 25)]
    steps = counts.patches[0]  # the pair counts, one step per merged bucket
    assert list(steps.get_path().vertices[:, 0]).count(25) >= 1


RETRACING = """
import numpy as np
import tensorflow as tf
import dsan_tf
from dsan_tf import NLIEnsemble
model = dsan_tf.load("dsan_snli25k_glove50")
ensemble = NLIEnsemble([model, dsan_tf.load("dsan_snli25k_glove50")])
words = "a man in a red shirt plays the guitar on a busy street near the old market".split()
for n in (1, 3, 17, 64):
    premises = [" ".join(words[: 2 + i % 15]) for i in range(n)]
    hypotheses = [" ".join(words[i % 5: 6 + i % 11]) for i in range(n)]
    labels = ["entailment", "neutral", "contradiction"] * n
    model.predict((premises, hypotheses), batch_size=max(1, n // 3))
    model.evaluate((premises, hypotheses), labels[:n], verbose=0)
    model.classify(premises, hypotheses)
    model.encode(premises)
    ensemble.predict((premises, hypotheses))
    ensemble.evaluate((premises, hypotheses), labels[:n], verbose=0)

@tf.function
def probe(x, n):
    return x * n

for n in range(8):  # what TensorFlow says of a function that retraces: seen here
    probe(tf.constant(1.0), n)
"""


@pytest.mark.slow
def test_ordinary_predict_and_evaluate_never_retrace():
    """Text predicted, evaluated, classified and encoded in batches of every size, by a
    model and an ensemble: TensorFlow's "triggered tf.function retracing" warning never
    comes (it comes, in the same process, for a function that does retrace)."""
    import subprocess
    import sys

    from helpers import ROOT

    done = subprocess.run([sys.executable, "-c", RETRACING], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "retracing" in line]
    assert said and all("probe" in line for line in said), said
