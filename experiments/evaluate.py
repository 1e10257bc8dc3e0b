"""Evaluates a trained run on one or more data sources.

    python -m experiments.evaluate --workdir=DIR --data=SPEC [--data=SPEC ...] --output=FILE.json

Per source: accuracy, per-class precision/recall/F1, confusion matrix, accuracy by the
pair's average length in 5-token buckets (the paper's Figure 6) and `oov_rate` (the fraction
of tokens mapped to the unknown word); printed and written as JSON.
"""

import json

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS


def evaluate(model, vocab, config, spec):
    import numpy as np

    from dsan_tf import data, metrics

    examples, report = data.read_examples(spec, FLAGS.tfds_data_dir)
    if not examples:
        run.fail(f"--data={spec} holds no labelled examples.")
    pairs = data.encode(examples, vocab, config["max_length"])
    dataset = data.make_dataset(pairs, batch_size=FLAGS.batch_size)
    labels, predictions, premise_lengths, hypothesis_lengths = [], [], [], []
    for inputs, batch_labels in dataset:
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
    return result


def main(argv):
    run.start(argv, data="the data to evaluate on (repeat it for several sources)")
    from dsan_tf import data, metrics

    model, vocab, config = run.load_run()
    results = {"workdir": FLAGS.workdir, "model": config["model"], "sources": {}}
    for spec in FLAGS.data:
        try:
            result = evaluate(model, vocab, config, spec)
        except data.DataError as error:
            run.fail(str(error))
        results["sources"][spec] = result
        print(metrics.format_report(spec, result))
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"metrics: {FLAGS.output}")


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
