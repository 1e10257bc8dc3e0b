r"""The paper's analysis figures (Section 5.5) from trained runs, as PNG files.

    dsan-visualize --workdir=DIR --sentence="A lady stands outside of a Mexican market." \
        [--compare_workdir=DIR2] [--evaluation=NAME=eval.json ...] --output_dir=DIR

Writes fig07_attention.png (per head and averaged, forward and backward), fig09_fusion_gate.png,
fig10_ffn.png, fig11_pooling.png; with --compare_workdir fig08_compare.png (average maps of both
runs on --long_sentence); with --evaluation fig06_length.png (accuracy by pair length); with
--distance_data attention_by_distance.png and .json: the attention weight at each query-key
distance over that source's sentences, for --workdir (and --compare_workdir), against uniform
attention and the distance prior alone over the same keys (Figure 8 counted over a corpus).
A DiSAN run gets fig07 (one map per direction: its per-dimension weights averaged over the
dimensions), fig09 and fig11 (it has no FFN: no fig10); a CBOW run has nothing to draw and says
so. For a pair model (--model=gaussian_transformer) it writes self_attention.png and
inter_attention.png for --sentence as premise and --hypothesis.
All values come from the model's own intermediate outputs (dsan_tf.evaluation.analysis).
"""

import json
import os

from absl import flags

from dsan_tf.common import atomic
from dsan_tf.core import rundir
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_run_workdir_flag()
    project_flags.define_reading_flags()
    flags.DEFINE_string("sentence", "A lady stands outside of a Mexican market.",
                        "Sentence for the single-model figures (7, 9, 10, 11).")
    flags.DEFINE_string("long_sentence",
                        "A young boy in a red shirt and blue jeans is climbing up the side of "
                        "a large rock while his father watches from the grass below the cliff.",
                        "Long sentence for the two-model comparison (Figure 8).")
    flags.DEFINE_string("hypothesis", "A woman is outside.",
                        "Pair models: the hypothesis read with --sentence as premise.")
    flags.DEFINE_string("compare_workdir", None,
                        "A second run for Figure 8 (e.g. no distance mask).")
    project_flags.require_existing("compare_workdir", directory=True)
    flags.DEFINE_string("distance_data", None, "A data source whose premises and hypotheses "
                        "are read for the attention-by-distance figure.")
    project_flags.require_existing("distance_data", prefixes=project_flags.DATA_PREFIXES)
    flags.DEFINE_integer("distance_sentences", 2000, "How many of --distance_data's first "
                         "pairs (both sentences of each) that figure reads.", lower_bound=1)
    flags.DEFINE_string("output_dir", None, "Where to write the PNG files.")
    project_flags.require_output_directory("output_dir")
    project_flags.refuse_inside_runs("output_dir")
    flags.DEFINE_multi_string("evaluation", None,
                              "Figure 6: an dsan-evaluate JSON file, optionally "
                              "NAME=FILE.")
    flags.register_validator("evaluation", lambda specs: all(
        os.path.isfile(spec.rpartition("=")[2]) for spec in specs or []),
        "each --evaluation must name an existing dsan-evaluate JSON file (NAME=FILE "
        "or FILE)")


def short_source(spec):
    """A data source as a legend shows it: its file name without the directory and the
    .jsonl/.gz endings (tfds: and synthetic: specs as they are)."""
    if ":" in spec.split("/")[0]:
        return spec
    name = os.path.basename(spec)
    for ending in (".gz", ".jsonl", ".txt", ".tsv"):
        name = name[:-len(ending)] if name.endswith(ending) else name
    return name


def _suffixes(path):
    """`path`'s last component, its last two, ... up to the whole path."""
    parts = os.path.normpath(path).split(os.sep)
    return [os.path.join(*parts[-count:]) or os.sep for count in range(1, len(parts) + 1)]


def load_evaluations(specs):
    """{curve label: accuracy by length} of each source of each --evaluation file. A label
    is "RUN on SOURCE", with the run's folder name (or NAME=) and the source's short name,
    made longer where two curves would share one (mine.jsonl and mine.tsv; seed0/dsan and
    seed1/dsan), so that no curve replaces another."""
    curves = []  # [run names, source names, levels, accuracy by length]
    for spec in specs:
        name, _, path = spec.rpartition("=")
        if not os.path.isfile(path):
            raise program.UsageError(f"--evaluation file {path} does not exist.")
        results = rundir.read_json(path)
        runs = [name] if name else _suffixes(results.get("workdir", path))
        for source, result in results.get("sources", {}).items():
            sources = [short_source(source), *_suffixes(source)]
            curves.append([runs, sources, [0, 0], result["accuracy_by_length"]])
    if not curves:
        raise program.UsageError("no dsan-evaluate results found in --evaluation.")

    def label(curve):
        (runs, sources, (run_level, source_level), _) = curve
        return f"{runs[min(run_level, len(runs) - 1)]} on " \
               f"{sources[min(source_level, len(sources) - 1)]}"

    while True:  # each round makes names longer, up to whole paths
        groups = {}
        for curve in curves:
            groups.setdefault(label(curve), []).append(curve)
        shared = [group for group in groups.values() if len(group) > 1]
        if not shared:
            break
        longer = False
        for group in shared:
            # The source's longer names where they tell the curves apart, else the run's.
            for side in (1, 0):
                if len({tuple(curve[side][curve[2][side] + 1:]) for curve in group}) > 1:
                    for curve in group:
                        curve[2][side] += 1
                    longer = True
                    break
        if not longer:  # the same run and source twice
            break
    labels = {}
    for curve in curves:  # the same file given twice: numbered
        text, count = label(curve), 2
        while text in labels:
            text, count = f"{label(curve)} ({count})", count + 1
        labels[text] = curve[3]
    return labels


@program.main(required={"workdir": program.RUN_DIRECTORY,
                        "output_dir": "where to write the figures"})
def main(argv):
    # TensorFlow loads here, after --help.
    from dsan_tf.evaluation import figures as analysis_figures
    from dsan_tf.evaluation import plots

    run = rundir.RunDirectory(FLAGS.workdir)
    if rundir.is_run_directory(FLAGS.workdir):
        run.say_if_unfinished()  # its best model so far, as predict says
    figures = analysis_figures.run_figures(run, FLAGS.sentence, FLAGS.hypothesis)
    if FLAGS.compare_workdir:
        figures["fig08_compare"] = analysis_figures.comparison(
            [run, rundir.RunDirectory(FLAGS.compare_workdir)], FLAGS.long_sentence)
    if FLAGS.evaluation:
        figures["fig06_length"] = plots.accuracy_by_length(load_evaluations(FLAGS.evaluation))
    if FLAGS.distance_data:
        runs = [run] + ([rundir.RunDirectory(FLAGS.compare_workdir)]
                        if FLAGS.compare_workdir else [])
        profiles = analysis_figures.distance_profiles(
            runs, project_flags.reading_config(), FLAGS.distance_data, FLAGS.distance_sentences)
        figures["attention_by_distance"] = analysis_figures.distance_figure(profiles)
    os.makedirs(FLAGS.output_dir, exist_ok=True)  # once there is something to write
    if FLAGS.distance_data:
        path = os.path.join(FLAGS.output_dir, "attention_by_distance.json")
        atomic.write_text(path, json.dumps(profiles, indent=2))
        print(path)
    for stem, figure in figures.items():
        path = os.path.join(FLAGS.output_dir, f"{stem}.png")
        atomic.write_bytes(path, plots.png_bytes(figure))
        print(path)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
