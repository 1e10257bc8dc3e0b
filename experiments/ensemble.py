"""Evaluates (and exports) an ensemble of trained runs that averages their probabilities.

    python -m experiments.ensemble --workdir=RUN_A --workdir=RUN_B [--workdir=...] \
        --data=SPEC [--data=SPEC ...] --output=FILE.json [--export_dir=DIR]

The papers' ensembles average the class distributions of their members (AF-DMN, Section
5.3; Gaussian Transformer, Tables 2-3). Members may be of different model kinds with
different vocabularies: each tokenizes with its own preprocessor. Per source, the ensemble
and every member get `experiments.evaluate`'s report (accuracy, per-class scores, confusion
matrix, accuracy by length, with lengths as the first member counts tokens); two-way sources
(HANS) are scored two-way, as experiments.evaluate scores them. --export_dir
writes one SavedModel whose raw-string `serving_default` runs the whole ensemble.
"""

import json

from absl import flags

from experiments import flags as project_flags
from experiments import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_reading_flags()
    project_flags.define_output_flag()
    flags.DEFINE_multi_string("workdir", None, "A finished experiments.train run; repeat it "
                              "for every member (at least two).")
    project_flags.require_existing("workdir", directory=True)
    flags.DEFINE_multi_string("data", None, "Data source spec(s) to evaluate on.")
    project_flags.require_existing("data", prefixes=project_flags.DATA_PREFIXES)
    flags.DEFINE_string("export_dir", None, "Also write the ensemble as one SavedModel in "
                        "EXPORT_DIR/<next version>/ (TF Serving's layout).")
    flags.DEFINE_boolean("save_predictions", False, "Also write the ensemble's and each "
                         "member's predicted and gold label ids, in file order, as strings "
                         "of digits (`predictions`, `labels`), as experiments.evaluate does.")


def load_members(workdirs):
    """[(workdir, model, preprocessor, config)]; `UsageError` when the members' label names
    differ (their probabilities would not describe the same classes)."""
    from dsan_tf.labels import LABELS
    from experiments.rundir import RunDirectory

    members = [(workdir, *RunDirectory(workdir).load()) for workdir in workdirs]
    first_dir, _, _, first = members[0]
    expected = first.get("label_names", list(LABELS))
    for workdir, _, _, config in members[1:]:
        names = config.get("label_names", list(LABELS))
        if names != expected:
            raise program.UsageError(
                f"--workdir={workdir} predicts the labels {names} but --workdir={first_dir} "
                f"predicts {expected}: an ensemble averages probabilities of the same labels.")
    return members


def member_probabilities(task, model, preprocessor, examples):
    """float32 [N, C] probabilities of one member, in the order of `examples`, and the
    premise and hypothesis token counts."""
    import numpy as np

    from dsan_tf.task import predict

    pairs = preprocessor.encode(examples)
    out = predict(model, task.build_inputs(pairs, in_order=True))
    return (out.probabilities, [out.premise_lengths, out.hypothesis_lengths],
            np.asarray(pairs.labels))


def evaluate_source(task, members, spec, save_predictions=False):
    """{"ensemble": report, "members": {workdir: report}} on the source `spec`."""
    import numpy as np

    from dsan_tf import metrics

    examples, report = task.read(spec, "data")
    outputs = [member_probabilities(task, model, preprocessor, examples)
               for _, model, preprocessor, _ in members]
    labels, (premise_lengths, hypothesis_lengths) = outputs[0][2], outputs[0][1]

    def scored(probabilities):
        predictions, result = metrics.score(labels, np.argmax(probabilities, axis=-1),
                                            premise_lengths, hypothesis_lengths)
        result["read"] = report.summary()
        if save_predictions:
            result["predictions"] = "".join(map(str, predictions.tolist()))
            result["labels"] = "".join(map(str, labels.tolist()))
        return result

    mean = np.mean([probabilities for probabilities, _, _ in outputs], axis=0)
    return {"ensemble": scored(mean),
            "members": {workdir: scored(probabilities)
                        for (workdir, *_), (probabilities, _, _) in zip(members, outputs)}}


def write_card(members, results, directory):
    """MODEL_CARD.md of an ensemble: how it combines, its measured accuracy, and each
    member's own card."""
    import os

    from experiments import model_card
    from experiments.rundir import RunDirectory

    lines = [f"# Model card: an ensemble of {len(members)} runs", "",
             "The mean of the members' class probabilities (AF-DMN, Section 5.3). Its limits "
             "are its members' (below).", "", "## Metrics", ""]
    lines += [f"- {spec}: accuracy {source['ensemble']['accuracy']:.4f}"
              for spec, source in results["sources"].items()] or ["- none measured (give "
                                                                  "--data)"]
    lines += ["", "## Members", ""]
    for workdir, *_ in members:
        card = "\n" + model_card.text(RunDirectory(workdir))  # its headings one level down
        lines += [f"### {workdir}", card.replace("\n# ", "\n#### ").replace("\n## ", "\n#### ")]
    with open(os.path.join(directory, model_card.CARD), "w", encoding="utf-8") as stream:
        stream.write("\n".join(lines))


@program.main
def main(argv):
    program.check_start(argv)
    if not FLAGS.workdir or len(FLAGS.workdir) < 2:
        raise program.UsageError("give at least two --workdir runs to ensemble.")
    if not FLAGS.data and not FLAGS.export_dir:
        raise program.UsageError("give --data to evaluate on, --export_dir, or both.")
    if FLAGS.export_dir:
        program.require_tensorflow_backend("--export_dir")
    from dsan_tf import metrics  # TensorFlow loads here, not for --help
    from dsan_tf.config import DataConfig, ExperimentConfig
    from dsan_tf.serving import EnsemblePredictor, Predictor
    from dsan_tf.task import NLITask

    members = load_members(FLAGS.workdir)
    task = NLITask(ExperimentConfig(data=DataConfig(
        tfds_data_dir=FLAGS.tfds_data_dir, batch_size=FLAGS.batch_size)), log=lambda _: None)
    results = {"workdirs": FLAGS.workdir, "models": [config["model"] for *_, config in members],
               "sources": {}}
    for spec in FLAGS.data or []:
        results["sources"][spec] = source = evaluate_source(task, members, spec,
                                                            FLAGS.save_predictions)
        for workdir, report in source["members"].items():
            print(f"member {workdir}: accuracy {report['accuracy']:.4f}")
        print(metrics.format_report(f"ensemble of {len(members)}: {spec}", source["ensemble"]))
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as stream:
            json.dump(results, stream, indent=2)
        print(f"metrics: {FLAGS.output}")
    if FLAGS.export_dir:
        from dsan_tf.serving import version_dir

        target = version_dir(FLAGS.export_dir)
        EnsemblePredictor([Predictor(model, preprocessor)
                           for _, model, preprocessor, _ in members]).export(target)
        write_card(members, results, target)
        print(f"SavedModel of the ensemble: {target}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
