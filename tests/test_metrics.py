"""The evaluation metrics and the significance tests the study's p-values rest on."""

import math

import numpy as np
import pytest

from dsan_tf.common.labels import LABEL_IDS, NON_ENTAILMENT_ID
from dsan_tf.evaluation import metrics

E, N, C = (LABEL_IDS[name] for name in ("entailment", "neutral", "contradiction"))


def test_report_counts_classes_and_buckets_lengths():
    labels = [E, E, N, C, C, C]
    predictions = [E, N, N, C, C, E]
    report = metrics.classification_report(labels, predictions, [2, 4, 12, 3, 3, 30],
                                           [2, 6, 8, 3, 3, 30])
    assert report["accuracy"] == pytest.approx(4 / 6)
    assert report["confusion_matrix"] == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    assert report["per_class"]["entailment"] == pytest.approx(
        {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2})
    assert report["per_class"]["neutral"]["precision"] == pytest.approx(0.5)
    # Average pair length in 5-token buckets (the paper's Figure 6): 2, 5, 10, 3, 3, 30.
    assert [(b["min_length"], b["examples"]) for b in report["accuracy_by_length"]] == [
        (0, 3), (5, 1), (10, 1), (30, 1)]


def test_two_way_gold_collapses_neutral_and_contradiction():
    """HANS's convention: a three-way model's neutral or contradiction is non-entailment."""
    labels = [E, NON_ENTAILMENT_ID, NON_ENTAILMENT_ID, NON_ENTAILMENT_ID]
    scored, report = metrics.score(labels, [E, N, C, E], [3] * 4, [3] * 4)
    assert scored.tolist() == [E, NON_ENTAILMENT_ID, NON_ENTAILMENT_ID, E]
    assert report["accuracy"] == pytest.approx(0.75)
    assert report["per_gold_label"] == pytest.approx({"entailment": 1.0,
                                                      "non-entailment": 2 / 3})
    assert "gold non-entailment: 0.6667" in metrics.format_report("hans", report)
    three_way, full = metrics.score([E, N, C], [E, C, C], [3] * 3, [3] * 3)
    assert three_way.tolist() == [E, C, C] and "confusion_matrix" in full


@pytest.mark.parametrize("only_a, only_b", [(5, 0), (30, 12), (400, 350), (7, 7)])
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs(only_a, only_b):
    both = 50
    correct_a = np.array([True] * (only_a + both) + [False] * only_b + [False] * 20)
    correct_b = np.array([False] * only_a + [True] * both + [True] * only_b + [False] * 20)
    # The exact two-sided binomial test, in integers: 2 · P(X ≤ min) under Binomial(n, ½).
    n = only_a + only_b
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    expected = min(1.0, 2 * tail / 2**n)
    assert metrics.mcnemar_p(correct_a, correct_b) == pytest.approx(expected, rel=1e-9)
    assert metrics.mcnemar_p(correct_a, correct_a) == 1.0


def test_paired_bootstrap_separates_real_differences_from_none():
    rng = np.random.default_rng(1)
    a = rng.random((3, 2000)) < 0.72
    same = metrics.paired_bootstrap_p(a, a)
    assert same == (0.0, 1.0)
    better = a | (rng.random((3, 2000)) < 0.1)  # about 3 points better on every seed
    difference, p = metrics.paired_bootstrap_p(better, a, resamples=2000)
    assert difference == pytest.approx(better.mean() - a.mean()) and p < 0.01
    noise = rng.random(2000) < 0.72
    _, p = metrics.paired_bootstrap_p(noise, rng.random(2000) < 0.72, resamples=2000)
    assert p > 0.01


def test_paired_bootstrap_interval_brackets_the_difference_and_excludes_zero_only_when_real():
    rng = np.random.default_rng(2)
    a = rng.random((3, 2000)) < 0.72
    assert metrics.paired_bootstrap(a, a)[2] == (0.0, 0.0)
    better = a | (rng.random((3, 2000)) < 0.1)
    difference, p, (low, high) = metrics.paired_bootstrap(better, a, resamples=2000)
    assert 0 < low < difference < high and (difference, p) == metrics.paired_bootstrap_p(
        better, a, resamples=2000)
    noise = rng.random(2000) < 0.72
    difference, _, (low, high) = metrics.paired_bootstrap(noise, rng.random(2000) < 0.72)
    assert low < 0 < high and low < difference < high
    # The 99% interval holds the 95% one: the same resamples, wider percentiles.
    other = rng.random(2000) < 0.72
    low95, high95 = metrics.paired_bootstrap(noise, other)[2]
    low99, high99 = metrics.paired_bootstrap(noise, other, level=0.99)[2]
    assert low99 < low95 < high95 < high99


def test_paired_bootstrap_p_is_two_sided_and_agrees_with_mcnemar():
    """108 pairs only a gets right, 80 only b, of 2,000: the difference is 1.4 points,
    about 2.04 standard errors, so the two-sided p is about 0.041 (one-sided 0.021), and
    the exact McNemar test on the same split gives about the same."""
    a = np.zeros(2000, bool)
    b = np.zeros(2000, bool)
    a[:108] = True
    b[108:188] = True
    a[188:1400] = b[188:1400] = True
    difference, p = metrics.paired_bootstrap_p(a, b, resamples=20_000)
    assert difference == pytest.approx(0.014)
    assert 0.033 < p < 0.05
    assert abs(p - metrics.mcnemar_p(a, b)) < 0.015


def test_welch_p_is_students_t_with_welchs_degrees_of_freedom():
    """The study's test over seeds. Two samples of two values with equal variances have
    exactly 2 degrees of freedom, where Student's t has a closed form: p = 1 - |t|/√(2 + t²)."""
    t = 3 / math.sqrt(2)  # [0, 2] against [3, 5]: means 1 and 4, each variance of a mean 1
    assert metrics.welch_p([0, 2], [3, 5]) == pytest.approx(1 - t / math.sqrt(2 + t * t),
                                                            abs=1e-12)
    # Unequal variances and a fractional df: SciPy's ttest_ind(equal_var=False) gives
    # 0.059478512594506094 for the study's rows (docs/STUDY.md); the test is symmetric.
    ours, dsan = [72.63, 72.37, 71.74], [70.70, 71.44, 71.60]
    assert metrics.welch_p(ours, dsan) == pytest.approx(0.059478512594506094, abs=1e-12)
    assert metrics.welch_p(dsan, ours) == pytest.approx(metrics.welch_p(ours, dsan), abs=1e-15)
    assert metrics.welch_p(ours, ours) == pytest.approx(1.0)
    assert metrics.welch_p([1.0, 1.0], [1.0, 1.0]) == 1.0



def test_a_count_of_one_pair_is_singular():
    """"(1 pair)", not "(1 pairs)", in the reports users read."""
    from dsan_tf.common.progress import pairs
    from dsan_tf.evaluation.metrics import format_report, score

    assert (pairs(1), pairs(2), pairs(1234)) == ("1 pair", "2 pairs", "1,234 pairs")
    _, report = score(np.array([0]), np.array([0]), np.array([3]), np.array([2]))
    text = format_report("dev", report)
    assert "accuracy 1.0000 on 1 pair" in text and "(1 pair)" in text
    assert "1 pairs" not in text
