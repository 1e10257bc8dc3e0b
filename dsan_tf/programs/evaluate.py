"""Evaluates a trained run on one or more data sources.

    dsan-evaluate --workdir=DIR --data=SPEC [--data=SPEC ...] --output=FILE.json

Per source: accuracy, per-class precision/recall/F1, confusion matrix, accuracy by the
pair's average length in 5-token buckets (the paper's Figure 6) and `oov_rate` (the fraction
of tokens mapped to the unknown word); printed and written as JSON.

Two-way sources (HANS: gold `non-entailment`) are scored two-way: a prediction of neutral or
contradiction counts as non-entailment, and the report says so. `--group_by=FIELD` (repeat
it) adds the accuracy per value of a field of the source: HANS's `heuristic` and `subcase`,
Breaking NLI's `category`, SNLI's `captionID`, the full MultiNLI files' `genre` (the shipped
dev-matched file has none), or any other; records lacking it form the group `(missing)`.
"""

import sys

from absl import flags

from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_finished_workdir_flag()
    project_flags.define_reading_flags()
    project_flags.define_output_flag()
    project_flags.define_evaluation_flags()
    project_flags.refuse_onto_inputs("output", "data")
    flags.DEFINE_multi_string("group_by", None, "Also report the accuracy per value of this "
                              "field of the source (e.g. HANS's heuristic and subcase, SNLI's "
                              "captionID); records lacking it: the group (missing).")


@program.main(required={"workdir": program.TRAINED_MODEL,
                        "data": "the data to evaluate on (repeat it for several sources)"})
def main(argv):
    # TensorFlow loads here, after --help.
    from dsan_tf.evaluation import evaluator, metrics
    from dsan_tf.core.task import NLITask

    model, preprocessor, family = program.trained_model(FLAGS.workdir)
    task = NLITask(project_flags.reading_config(model=family), log=lambda _: None)
    results = {"workdir": FLAGS.workdir, "model": family, "sources": {}}
    for spec in FLAGS.data:
        result = evaluator.evaluate(task, model, preprocessor, spec, FLAGS.save_predictions,
                                     FLAGS.group_by or ())
        results["sources"][spec] = result
        tokens = result["tokens"]
        if tokens["truncated_premises"] or tokens["truncated_hypotheses"]:
            # The model read only the first tokens of these.
            print(f"warning: {spec}: {tokens['truncated_premises']:,} premises and "
                  f"{tokens['truncated_hypotheses']:,} hypotheses cut at "
                  f"{tokens['max_length']} tokens", file=sys.stderr)
        print(metrics.format_report(spec, result))
        if "groups" in result:
            print(evaluator.format_groups(result))
    program.write_output(results)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
