"""Evaluates a trained run on one or more data sources.

    python -m experiments.evaluate --workdir=DIR --data=SPEC [--data=SPEC ...] --output=FILE.json

Per source: accuracy, per-class precision/recall/F1, confusion matrix, accuracy by the
pair's average length in 5-token buckets (the paper's Figure 6) and `oov_rate` (the fraction
of tokens mapped to the unknown word); printed and written as JSON.
"""

import json

from absl import flags

from experiments import flags as project_flags
from experiments import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_workdir_flag()
    project_flags.define_reading_flags()
    project_flags.define_output_flag()
    flags.DEFINE_multi_string("data", None, "Data source spec(s) to evaluate on.")
    flags.DEFINE_boolean("save_predictions", False, "Also write each source's predicted and "
                         "gold label ids, in file order, as strings of digits (`predictions`, "
                         "`labels`), for paired significance tests between runs.")


def evaluate(task, model, preprocessor, spec, save_predictions=False):
    """The classification report of `model` on the source `spec` (with the label ids, in
    the file's order, when `save_predictions`)."""
    import numpy as np

    from dsan_tf import metrics

    examples, report = task.read(spec, "data")
    pairs = preprocessor.encode(examples)
    labels, predictions, premise_lengths, hypothesis_lengths = [], [], [], []
    for inputs, batch_labels in task.build_inputs(pairs, in_order=save_predictions):
        logits = model.predict_on_batch(inputs)
        predictions.append(np.argmax(logits, axis=-1))
        labels.append(batch_labels.numpy())
        premise_lengths.append(np.count_nonzero(inputs["premise"].numpy(), axis=1))
        hypothesis_lengths.append(np.count_nonzero(inputs["hypothesis"].numpy(), axis=1))
    result = metrics.classification_report(*(np.concatenate(x) for x in (
        labels, predictions, premise_lengths, hypothesis_lengths)))
    result["read"] = report.summary()
    result["tokens"] = pairs.report.summary()
    result["oov_rate"] = pairs.report.oov_rate
    if save_predictions:
        for key, values in (("predictions", predictions), ("labels", labels)):
            result[key] = "".join(map(str, np.concatenate(values).tolist()))
    return result


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
        results["sources"][spec] = evaluate(task, model, preprocessor, spec,
                                            FLAGS.save_predictions)
        print(metrics.format_report(spec, results["sources"][spec]))
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"metrics: {FLAGS.output}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
