r"""Evaluates (and exports) an ensemble of trained runs that averages their probabilities.

    dsan-ensemble --workdir=RUN_A --workdir=RUN_B [--workdir=...] \
        --data=SPEC [--data=SPEC ...] --output=FILE.json [--export_dir=DIR]

The papers' ensembles average the class distributions of their members (AF-DMN, Section
5.3; Gaussian Transformer, Tables 2-3). Members may be of different model kinds with
different vocabularies: each tokenizes with its own preprocessor. Per source, the ensemble
and every member get `dsan-evaluate`'s report (accuracy, per-class scores, confusion
matrix, accuracy by length, with lengths as the first member counts tokens); two-way sources
(HANS) are scored two-way, as dsan-evaluate scores them. --export_dir
writes one SavedModel whose raw-string `serving_default` runs the whole ensemble, its model
card, and each member's model.keras and preprocessor in members/<i>/ (dsan_tf.saving.export).
"""

import os

from absl import flags

from dsan_tf.common.errors import require_tensorflow_backend
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_reading_flags()
    project_flags.define_output_flag()
    flags.DEFINE_multi_string("workdir", None, "A finished dsan-train run; repeat it "
                              "for every member (at least two).")
    project_flags.require_existing("workdir", directory=True)
    project_flags.define_evaluation_flags()
    project_flags.refuse_onto_inputs("output", "data")
    flags.DEFINE_string("export_dir", None, "Also write the ensemble as one SavedModel in "
                        "EXPORT_DIR/<next version>/ (TF Serving's layout).")
    project_flags.require_output_directory("export_dir")
    project_flags.refuse_other_runs("export_dir")


def check_members():
    """At least two distinct --workdir runs, and something to do: before anything loads."""
    if not FLAGS.workdir or len(FLAGS.workdir) < 2:
        raise program.UsageError("give at least two --workdir runs to ensemble.")
    seen = {}
    for workdir in FLAGS.workdir:
        same = seen.setdefault(os.path.realpath(workdir), workdir)
        if same is not workdir:
            raise program.UsageError(f"--workdir={workdir} is given twice (as --workdir="
                                     f"{same}): an ensemble of a run with itself is that run.")
    if not FLAGS.data and not FLAGS.export_dir:
        raise program.UsageError("give --data to evaluate on, --export_dir, or both.")


@program.main(check=check_members)
def main(argv):
    if FLAGS.export_dir:
        require_tensorflow_backend("export_dir")
    # TensorFlow loads here, after --help.
    from dsan_tf.evaluation import evaluator, metrics
    from dsan_tf.core.task import NLITask
    from dsan_tf.saving import export

    members = evaluator.load_members(FLAGS.workdir)
    task = NLITask(project_flags.reading_config(), log=lambda _: None)
    results = {"workdirs": FLAGS.workdir, "models": [m.config["model"] for m in members],
               "sources": {}}
    for spec in FLAGS.data or []:
        results["sources"][spec] = source = evaluator.evaluate_ensemble(
            task, members, spec, FLAGS.save_predictions)
        for workdir, report in source["members"].items():
            print(f"member {workdir}: accuracy {report['accuracy']:.4f}")
        print(metrics.format_report(f"ensemble of {len(members)}: {spec}", source["ensemble"]))
    program.write_output(results)
    if FLAGS.export_dir:
        # Members still training were said so when loaded; their best so far is exported.
        target = export.export_runs([member.run for member in members], FLAGS.export_dir,
                                    unfinished=True, results=results["sources"])
        print(f"SavedModel of the ensemble, and each member's model files in "
              f"members/: {target}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
