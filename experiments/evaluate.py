"""Evaluates a trained run on one or more data sources.

    python -m experiments.evaluate --workdir=DIR --data=SPEC [--data=SPEC ...] --output=FILE.json

Per source: accuracy, per-class precision/recall/F1, confusion matrix, accuracy by the
pair's average length in 5-token buckets (the paper's Figure 6) and `oov_rate` (the fraction
of tokens mapped to the unknown word); printed and written as JSON.

Two-way sources (HANS: gold `non-entailment`) are scored two-way: a prediction of neutral or
contradiction counts as non-entailment, and the report says so. `--group_by=FIELD` (repeat
it) adds the accuracy per value of a string field of the source: HANS's `heuristic` and
`subcase`, Breaking NLI's `category`, MultiNLI's `genre`, or any other.
"""

import json
import sys

from absl import flags

from experiments import flags as project_flags
from experiments import program, progress

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_finished_workdir_flag()
    project_flags.define_reading_flags()
    project_flags.define_output_flag()
    flags.DEFINE_multi_string("data", None, "Data source spec(s) to evaluate on.")
    project_flags.require_existing("data", prefixes=project_flags.DATA_PREFIXES)
    flags.DEFINE_multi_string("group_by", None, "Also report the accuracy per value of this "
                              "field of the source (e.g. heuristic, subcase, category, genre).")
    flags.DEFINE_boolean("save_predictions", False, "Also write each source's predicted and "
                         "gold label ids, in file order, as strings of digits (`predictions`, "
                         "`labels`), for paired significance tests between runs.")


def evaluate(task, model, preprocessor, spec, save_predictions=False, group_by=()):
    """The classification report of `model` on the source `spec` (with the label ids, in
    the file's order, when `save_predictions`; per-group accuracy for each `group_by`
    field)."""
    import numpy as np

    from dsan_tf import metrics
    from dsan_tf.task import predict

    examples, report = task.read(spec, "data")
    for field in group_by:
        lacking = next((i for i, e in enumerate(examples) if e.field(field) is None), None)
        if lacking is not None:
            known = sorted({name for e in examples[:1000] for name, _ in e.fields})
            raise program.UsageError(
                f"--group_by={field}: example {lacking + 1} of {spec} has no field {field!r}; "
                "the fields it can group by (besides the two sentences and the gold label, "
                "whose per-class accuracy the report already shows) are: "
                f"{', '.join(known) or 'none'}.")
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
    result["read"] = report.summary()
    result["tokens"] = pairs.report.summary()
    result["oov_rate"] = pairs.report.oov_rate
    if save_predictions:
        for key, values in (("predictions", predictions), ("labels", labels)):
            result[key] = "".join(map(str, values.tolist()))
    return result


def format_groups(result):
    """The per-group accuracies as printed lines."""
    lines = []
    for field, groups in result.get("groups", {}).items():
        lines.append(f"  by {field}:")
        lines += [f"    {value:<40} {group['accuracy']:.4f}  ({group['examples']:,} pairs)"
                  for value, group in groups.items()]
    return "\n".join(lines)


@program.main
def main(argv):
    program.check_start(argv, data="the data to evaluate on (repeat it for several sources)")
    from dsan_tf import metrics  # TensorFlow loads here, not for --help
    from dsan_tf.config import DataConfig, ExperimentConfig
    from dsan_tf.task import NLITask
    from experiments.rundir import RunDirectory

    model, preprocessor, config = RunDirectory(FLAGS.workdir).load()
    task = NLITask(ExperimentConfig(model=config["model"], data=DataConfig(
        tfds_data_dir=FLAGS.tfds_data_dir, batch_size=FLAGS.batch_size)), log=lambda _: None)
    results = {"workdir": FLAGS.workdir, "model": config["model"], "sources": {}}
    for spec in FLAGS.data:
        result = evaluate(task, model, preprocessor, spec, FLAGS.save_predictions,
                          FLAGS.group_by or ())
        results["sources"][spec] = result
        if "truncated" in result["tokens"]:  # the model read only the first tokens
            print(f"warning: {spec}: {result['tokens']}", file=sys.stderr)
        print(metrics.format_report(spec, result))
        if "groups" in result:
            print(format_groups(result))
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"metrics: {FLAGS.output}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
