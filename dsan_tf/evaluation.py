"""Evaluating loaded models on a data source: one model's classification report
(`evaluate`) and an ensemble's, with each member's (`evaluate_ensemble`). Both predict
through `dsan_tf.task.predict`, the one prediction loop, and score with `dsan_tf.metrics`.
"""

import collections

import numpy as np

from dsan_tf import metrics, progress
from dsan_tf.errors import UsageError
from dsan_tf.labels import LABELS
from dsan_tf.rundir import RunDirectory
from dsan_tf.task import predict

# A loaded run: its `RunDirectory`, `NLIClassifier`, `NLIPreprocessor` and config dict.
Member = collections.namedtuple("Member", "run model preprocessor config")


def _check_fields(examples, spec, group_by):
    """`UsageError` naming the first example of `spec` that lacks a `group_by` field."""
    for field in group_by:
        lacking = next((i for i, e in enumerate(examples) if e.field(field) is None), None)
        if lacking is not None:
            known = sorted({name for e in examples[:1000] for name, _ in e.fields})
            raise UsageError(
                f"--group_by={field}: example {lacking + 1} of {spec} has no field {field!r}; "
                "the fields it can group by (besides the two sentences and the gold label, "
                "whose per-class accuracy the report already shows) are: "
                f"{', '.join(known) or 'none'}.")


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
        values = np.array([e.field(field) for e in examples])
        result.setdefault("groups", {})[field] = {
            value: {"examples": int(np.sum(values == value)),
                    "accuracy": float(np.mean(correct[values == value]))}
            for value in sorted(set(values.tolist()))}
    # Numbers, not sentences: {"source", "kept", "dropped": {reason: count}} and the
    # token counts (unknown words, truncation) of `EncodeReport`.
    result["read"] = report.to_dict()
    result["tokens"] = pairs.report.to_dict()
    result["oov_rate"] = pairs.report.oov_rate
    if save_predictions:
        for key, values in (("predictions", predictions), ("labels", labels)):
            result[key] = "".join(map(str, values.tolist()))
    return result


def format_groups(result):
    """The per-group accuracies of an `evaluate` report as printed lines."""
    lines = []
    for field, groups in result.get("groups", {}).items():
        lines.append(f"  by {field}:")
        lines += [f"    {value:<40} {group['accuracy']:.4f}  ({group['examples']:,} pairs)"
                  for value, group in groups.items()]
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
