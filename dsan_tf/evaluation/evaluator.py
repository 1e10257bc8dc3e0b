"""Evaluating loaded models on a data source: one model's classification report
(`evaluate`) and an ensemble's, with each member's (`evaluate_ensemble`). Both predict
through `dsan_tf.core.task.predict`, the one prediction loop, and score with
`dsan_tf.evaluation.metrics`.
"""

import collections

import numpy as np

from dsan_tf.common import progress
from dsan_tf.common.errors import UsageError
from dsan_tf.common.labels import LABELS
from dsan_tf.evaluation import metrics
from dsan_tf.core.rundir import RunDirectory
from dsan_tf.core.task import predict

# A loaded run: its `RunDirectory`, `NLIClassifier`, `NLIPreprocessor` and config dict.
Member = collections.namedtuple("Member", "run model preprocessor config")


# The group of the records that lack a `group_by` field (counted, not dropped).
MISSING = "(missing)"
# Groups printed per field; the JSON report holds all of them.
SHOWN_GROUPS = 20


def _check_fields(examples, spec, group_by):
    """`UsageError` when no example of `spec` has a `group_by` field (records lacking it
    otherwise form the group `MISSING`)."""
    for field in group_by:
        if all(e.field(field) is None for e in examples):
            known = sorted({name for e in examples[:1000] for name, _ in e.fields})
            raise UsageError(
                f"group_by={field}: no example of {spec} has a field {field!r}; the fields "
                "it can group by (besides the two sentences and the gold label, whose "
                "per-class accuracy the report already shows) are: "
                f"{', '.join(known) or 'none'}.", fields=("group_by",))


def _groups(examples, field, correct):
    """{value: {"examples", "accuracy"}} of `field`, every value (lacking it: `MISSING`)."""
    values = np.array([str(v) if (v := e.field(field)) is not None else MISSING
                       for e in examples])
    return {value: {"examples": int(np.sum(values == value)),
                    "accuracy": float(np.mean(correct[values == value]))}
            for value in sorted(set(values.tolist()))}


def evaluate(task, model, preprocessor, spec, save_predictions=False, group_by=()):
    """The classification report of `model` on the source `spec`: accuracy, per-class
    scores, confusion matrix, accuracy by length, what was read and truncated, the OOV
    rate; the label ids in the file's order when `save_predictions`; the accuracy per value
    of each `group_by` field."""
    examples, report = task.read(spec, "data")
    _check_fields(examples, spec, group_by)
    pairs = preprocessor.encode(examples)
    in_order = save_predictions or bool(group_by)
    with progress.Progress(f"evaluate {spec}", len(pairs.labels), "pairs") as shown:
        out = predict(model, task.build_inputs(pairs, in_order=in_order), shown.update)
    labels, predictions = out.labels, np.argmax(out.probabilities, axis=-1)
    lengths = (out.premise_lengths, out.hypothesis_lengths)
    predictions, result = metrics.score(labels, predictions, *lengths)
    correct = predictions == labels
    for field in group_by:
        result.setdefault("groups", {})[field] = _groups(examples, field, correct)
    # Numbers, not sentences: {"source", "kept", "dropped": {reason: count}} and the
    # token counts (unknown words, truncation) of `EncodeReport`.
    result["read"] = report.to_dict()
    result["tokens"] = pairs.report.to_dict()
    result["oov_rate"] = pairs.report.oov_rate
    if save_predictions:
        for key, values in (("predictions", predictions), ("labels", labels)):
            result[key] = "".join(map(str, values.tolist()))
    return result


def format_groups(result, shown=SHOWN_GROUPS):
    """The per-group accuracies of an `evaluate` report as printed lines: every group of a
    field with at most `shown` of them, else its `shown` largest and a line counting the
    rest (the JSON report, `--output`, holds every group)."""
    lines = []
    for field, groups in result.get("groups", {}).items():
        lines.append(f"  by {field}:")
        chosen = groups
        if len(groups) > shown:
            largest = sorted(groups, key=lambda value: -groups[value]["examples"])[:shown]
            chosen = {value: groups[value] for value in sorted(largest)}
        lines += [f"    {value:<40} {group['accuracy']:.4f}  ({progress.pairs(group['examples'])})"
                  for value, group in chosen.items()]
        if len(chosen) < len(groups):
            rest = [group["examples"] for value, group in groups.items() if value not in chosen]
            lines.append(f"    ... and {len(rest):,} more groups of {sum(rest):,} pairs "
                         f"(the {shown} largest are shown; --output's JSON has them all)")
    return "\n".join(lines)


def load_members(workdirs):
    """[`Member`] of finished runs; `UsageError` when their label names differ (their
    probabilities would not describe the same classes)."""
    members = [Member(run, *run.load()) for run in map(RunDirectory, workdirs)]
    expected = members[0].config.get("label_names", list(LABELS))
    for member in members[1:]:
        names = member.config.get("label_names", list(LABELS))
        if names != expected:
            raise UsageError(
                f"--workdir={member.run.workdir} predicts the labels {names} but "
                f"--workdir={members[0].run.workdir} predicts {expected}: an ensemble "
                "averages probabilities of the same labels.")
    return members


def _member_outputs(task, member, examples):
    """One member's `predict` output on `examples`, in their order (each member tokenizes
    with its own preprocessor)."""
    pairs = member.preprocessor.encode(examples)
    return predict(member.model, task.build_inputs(pairs, in_order=True))


def evaluate_ensemble(task, members, spec, save_predictions=False):
    """{"ensemble": report, "members": {workdir: report}} on the source `spec`: the
    ensemble predicts the mean of its members' probabilities (AF-DMN, Section 5.3);
    lengths are counted as the first member tokenizes."""
    examples, report = task.read(spec, "data")
    outputs = [_member_outputs(task, member, examples) for member in members]
    first = outputs[0]

    def scored(probabilities):
        predictions, result = metrics.score(first.labels, np.argmax(probabilities, axis=-1),
                                            first.premise_lengths, first.hypothesis_lengths)
        result["read"] = report.to_dict()
        if save_predictions:
            result["predictions"] = "".join(map(str, predictions.tolist()))
            result["labels"] = "".join(map(str, np.asarray(first.labels).tolist()))
        return result

    mean = np.mean([out.probabilities for out in outputs], axis=0)
    return {"ensemble": scored(mean),
            "members": {member.run.workdir: scored(out.probabilities)
                        for member, out in zip(members, outputs)}}
