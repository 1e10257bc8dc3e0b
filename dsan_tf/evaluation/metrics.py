"""Evaluation metrics of NLI predictions (accuracy, per-class P/R/F1, confusion matrix, and
accuracy by sentence length as in the paper's Figure 6). Plain NumPy on model outputs."""

import math
import statistics

import numpy as np

from dsan_tf.common import progress
from dsan_tf.common.labels import LABEL_IDS, LABELS, NON_ENTAILMENT, NON_ENTAILMENT_ID

LENGTH_BUCKET = 5


def classification_report(labels, predictions, premise_lengths, hypothesis_lengths):
    """Metrics of one evaluation.

    Args:
        labels, predictions: int arrays [N] of label ids.
        premise_lengths, hypothesis_lengths: int arrays [N], token counts.

    Returns:
        JSON-ready dict: `examples`, `accuracy`, `per_class` {label: precision, recall, f1,
        support}, `confusion_matrix` (rows gold, columns predicted, in `LABELS` order),
        `labels`, and `accuracy_by_length`: a list of {`min_length`, `max_length`,
        `examples`, `accuracy`} over the pair's average length in 5-token buckets.
    """
    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    confusion = np.zeros((len(LABELS), len(LABELS)), dtype=np.int64)
    np.add.at(confusion, (labels, predictions), 1)
    per_class = {}
    for index, name in enumerate(LABELS):
        true_positive = confusion[index, index]
        predicted, actual = confusion[:, index].sum(), confusion[index].sum()
        precision = true_positive / predicted if predicted else 0.0
        recall = true_positive / actual if actual else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[name] = {"precision": float(precision), "recall": float(recall),
                           "f1": float(f1), "support": int(actual)}
    average = (np.asarray(premise_lengths) + np.asarray(hypothesis_lengths)) / 2.0
    buckets = (average // LENGTH_BUCKET).astype(np.int64)
    by_length = []
    for bucket in np.unique(buckets):
        chosen = buckets == bucket
        by_length.append({"min_length": int(bucket * LENGTH_BUCKET),
                          "max_length": int((bucket + 1) * LENGTH_BUCKET),
                          "examples": int(chosen.sum()),
                          "accuracy": float(np.mean(labels[chosen] == predictions[chosen]))})
    return {"examples": int(labels.size),
            "accuracy": float(np.mean(labels == predictions)) if labels.size else 0.0,
            "labels": list(LABELS), "per_class": per_class,
            "confusion_matrix": confusion.tolist(), "accuracy_by_length": by_length}


def score(labels, predictions, premise_lengths, hypothesis_lengths):
    """The report of three-way predictions against `labels`, three-way or two-way.

    Two-way gold labels (HANS: entailment / non-entailment, `NON_ENTAILMENT_ID`) are scored
    the way HANS's three-way models are: a prediction of neutral or contradiction counts as
    non-entailment.

    Args:
        labels: int [N] gold ids; any `NON_ENTAILMENT_ID` makes the evaluation two-way.
        predictions: int [N] predicted ids in `LABELS` order.
        premise_lengths, hypothesis_lengths: int [N] token counts.

    Returns:
        (the predictions as scored, int [N]: collapsed to two-way where the gold is; the
        report: `classification_report`'s, or for two-way gold `examples`, `accuracy`,
        `two_way` (a sentence saying how it was scored) and `per_gold_label` accuracies).
    """
    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    if not np.any(labels == NON_ENTAILMENT_ID):
        return predictions, classification_report(labels, predictions, premise_lengths,
                                                   hypothesis_lengths)
    entailment = LABEL_IDS["entailment"]
    predictions = np.where(predictions == entailment, entailment, NON_ENTAILMENT_ID)
    return predictions, {
        "examples": int(labels.size), "accuracy": float(np.mean(predictions == labels)),
        "two_way": f"gold labels are entailment / {NON_ENTAILMENT}: predictions of neutral "
                   f"or contradiction count as {NON_ENTAILMENT}",
        "per_gold_label": {name: float(np.mean(predictions[labels == i] == i))
                           for name, i in (("entailment", entailment),
                                           (NON_ENTAILMENT, NON_ENTAILMENT_ID))
                           if np.any(labels == i)}}


def format_report(name, report):
    """The report (`score`'s, three-way or two-way) as a text table."""
    header = (f"{name}: accuracy {report['accuracy']:.4f} on {progress.pairs(report['examples'])}"
              + (f", oov_rate {report['oov_rate']:.2%}" if "oov_rate" in report else ""))
    if "two_way" in report:
        return "\n".join([header, f"  two-way: {report['two_way']}"]
                         + [f"    gold {label}: {accuracy:.4f}"
                            for label, accuracy in report["per_gold_label"].items()])
    lines = [header,
             f"  {'class':<14}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}"]
    for label, values in report["per_class"].items():
        lines.append(f"  {label:<14}{values['precision']:>10.4f}{values['recall']:>10.4f}"
                     f"{values['f1']:>10.4f}{values['support']:>10,}")
    lines.append("  confusion (rows gold, columns predicted): "
                 + "  ".join(str(row) for row in report["confusion_matrix"]))
    lines.append("  accuracy by average pair length (tokens):")
    for bucket in report["accuracy_by_length"]:
        lines.append(f"    [{bucket['min_length']:>3}, {bucket['max_length']:>3})"
                     f"  {bucket['accuracy']:.4f}  ({progress.pairs(bucket['examples'])})")
    return "\n".join(lines)


def mcnemar_p(correct_a, correct_b):
    """Exact two-sided McNemar test of two classifiers on the same examples.

    Args:
        correct_a, correct_b: bool [N], whether each classifier got each example right.

    Returns:
        The p-value: the binomial probability, under "both are equally accurate", of a split
        of the discordant examples at least as uneven as the one observed.
    """
    correct_a, correct_b = np.asarray(correct_a, bool), np.asarray(correct_b, bool)
    only_a = int(np.sum(correct_a & ~correct_b))
    only_b = int(np.sum(~correct_a & correct_b))
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0
    # log C(n, i) - n log 2, summed in log space: n is in the thousands on SNLI dev.
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
            for i in range(k + 1)]
    top = max(logs)
    tail = math.exp(top) * sum(math.exp(v - top) for v in logs)
    return min(1.0, 2.0 * tail)


def paired_bootstrap(correct_a, correct_b, resamples=10_000, seed=0, chunk=500, level=0.95):
    """Paired bootstrap of the accuracy difference of two systems, each run with one or
    more seeds, on the same examples (examples are resampled; seeds averaged per example).

    Args:
        correct_a, correct_b: bool [S_a, N] and [S_b, N] (or [N]): per seed and example.
        resamples: bootstrap samples of the N examples.
        seed: of the resampling.
        level: of the percentile interval.

    Returns:
        (difference of mean accuracies a - b, two-sided p-value: twice the share of
        resampled differences on the far side of zero, at most 1, (low, high): the central
        `level` percentile interval of the resampled differences).
    """
    score_a = np.atleast_2d(np.asarray(correct_a, np.float32)).mean(axis=0)
    score_b = np.atleast_2d(np.asarray(correct_b, np.float32)).mean(axis=0)
    difference = score_a - score_b
    rng = np.random.default_rng(seed)
    means = np.concatenate([
        difference[rng.integers(0, difference.size, (min(chunk, resamples - start),
                                                      difference.size))].mean(1)
        for start in range(0, resamples, chunk)])
    p = min(1.0, 2.0 * min(np.sum(means <= 0), np.sum(means >= 0)) / resamples)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(difference.mean()), float(p), (float(low), float(high))


def paired_bootstrap_p(correct_a, correct_b, resamples=10_000, seed=0, chunk=500):
    """`paired_bootstrap`'s (difference, p-value)."""
    return paired_bootstrap(correct_a, correct_b, resamples, seed, chunk)[:2]


def _incomplete_beta(x, a, b):
    """The regularised incomplete beta function I_x(a, b), by its continued fraction
    (modified Lentz), on the side where it converges fast."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(1.0 - x, b, a)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x)) / a
    tiny, c, d = 1e-300, 1.0, 0.0
    f = None
    for i in range(400):
        m = i // 2
        if i == 0:
            numerator = 1.0
        elif i % 2:
            numerator = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            numerator = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + numerator * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + numerator / c
        c = c if abs(c) > tiny else tiny
        f = c * d if f is None else f * c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return front * (f - 1.0)


def welch_p(a, b):
    """Welch's t-test of two samples' means with unequal variances: the study's test over
    seeds, which (unlike `paired_bootstrap`, which averages a row's seeds per example)
    counts training's randomness.

    Args:
        a, b: the samples (e.g. each seed's accuracy), two values or more each.

    Returns:
        The two-sided p-value, from Student's t with Welch-Satterthwaite degrees of freedom.
    """
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return 1.0 if statistics.fmean(a) == statistics.fmean(b) else 0.0
    t = (statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return _incomplete_beta(df / (df + t * t), df / 2, 0.5)
