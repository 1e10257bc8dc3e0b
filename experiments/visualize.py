"""The paper's analysis figures (Section 5.5) from trained runs, as PNG files.

    python -m experiments.visualize --workdir=DIR --sentence="A lady stands outside of a Mexican market." \
        [--compare_workdir=DIR2] [--evaluation=NAME=eval.json ...] --output_dir=DIR

Writes fig07_attention.png (per head and averaged, forward and backward), fig09_fusion_gate.png,
fig10_ffn.png, fig11_pooling.png; with --compare_workdir fig08_compare.png (average maps of both
runs on --long_sentence); with --evaluation fig06_length.png (accuracy by pair length); with
--distance_data attention_by_distance.png and .json: the attention weight at each query-key
distance over that source's sentences, for --workdir (and --compare_workdir), against uniform
attention and the distance prior alone over the same keys (Figure 8 counted over a corpus).
For a pair model (--model=gaussian_transformer) it writes self_attention.png and
inter_attention.png for --sentence as premise and --hypothesis.
All values come from the model's own intermediate outputs (dsan_tf.analysis).
"""

import json
import os

from absl import flags

from experiments import flags as project_flags
from experiments import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_finished_workdir_flag()
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
    flags.DEFINE_multi_string("evaluation", None,
                              "Figure 6: an experiments.evaluate JSON file, optionally "
                              "NAME=FILE.")
    flags.register_validator("evaluation", lambda specs: all(
        os.path.isfile(spec.rpartition("=")[2]) for spec in specs or []),
        "each --evaluation must name an existing experiments.evaluate JSON file (NAME=FILE "
        "or FILE)")


def analysed(workdir, sentence, loaded=None):
    """(tokens, `dsan_tf.analysis.sentence_analysis`, config dict) of a run on a sentence;
    `loaded`: the run's `RunDirectory.load()` if already made."""
    from dsan_tf import analysis
    from dsan_tf.models import AnalysisUnavailable
    from experiments.rundir import RunDirectory

    model, preprocessor, config = loaded or RunDirectory(workdir).load()
    tokens = preprocessor.tokens(sentence)
    if not tokens:
        raise program.UsageError("the sentence has no tokens.")
    ids = preprocessor.token_ids([sentence]).to_list()[0]
    try:
        return tokens, analysis.sentence_analysis(model.backbone, ids), config
    except AnalysisUnavailable as error:
        raise program.UsageError(f"--workdir={workdir} is a {config['model']} run: "
                                 f"{error}") from None


def pair_figures(model, preprocessor, premise, hypothesis):
    """A pair model's self- and inter-attention figures for one pair."""
    from dsan_tf import analysis, plots

    tokens = [preprocessor.tokens(text) for text in (premise, hypothesis)]
    if not all(tokens):
        raise program.UsageError("--sentence and --hypothesis must each have a token.")
    ids = [preprocessor.token_ids([text]).to_list()[0] for text in (premise, hypothesis)]
    attention = analysis.pair_analysis(model.backbone, *ids)
    return plots.pair_attention_figures(*tokens, attention, f"{premise} / {hypothesis}")


def short_source(spec):
    """A data source as a legend shows it: its file name without the directory and the
    .jsonl/.gz endings (tfds: and synthetic: specs as they are)."""
    if ":" in spec.split("/")[0]:
        return spec
    name = os.path.basename(spec)
    for ending in (".gz", ".jsonl", ".txt", ".tsv"):
        name = name[:-len(ending)] if name.endswith(ending) else name
    return name


def load_evaluations(specs):
    runs = {}
    for spec in specs:
        name, _, path = spec.rpartition("=")
        if not os.path.isfile(path):
            raise program.UsageError(f"--evaluation file {path} does not exist.")
        with open(path, encoding="utf-8") as stream:
            results = json.load(stream)
        run = name or os.path.basename(os.path.normpath(results.get("workdir", path)))
        for source, result in results.get("sources", {}).items():
            runs[f"{run} on {short_source(source)}"] = result["accuracy_by_length"]
    if not runs:
        raise program.UsageError("no experiments.evaluate results found in --evaluation.")
    return runs


def comparison(workdirs, sentence):
    """Figure 8: the average attention maps of two runs on one sentence."""
    from dsan_tf import plots

    maps, titles = [], []
    for workdir in workdirs:
        tokens, result, config = analysed(workdir, sentence)
        maps.append((result["forward_attention"], result["backward_attention"]))
        prior = config["model_config"].get("distance_prior", "?")
        titles.append(f"{os.path.basename(os.path.normpath(workdir))} (distance prior: {prior})")
    return plots.compare_attention(tokens, maps, titles)


def short_name(workdir):
    """The run directory's last two path parts (study runs all end in seedN)."""
    return "/".join(os.path.normpath(workdir).split(os.sep)[-2:])


def distance_profiles(workdirs, spec, pairs):
    """{run name: `analysis.attention_by_distance`} over both sentences of the first
    `pairs` pairs of `spec`, in batches of sentences of similar length."""
    import numpy as np

    from dsan_tf import analysis
    from dsan_tf.config import DataConfig, ExperimentConfig
    from dsan_tf.models import AnalysisUnavailable
    from dsan_tf.task import NLITask
    from experiments.rundir import RunDirectory

    task = NLITask(ExperimentConfig(data=DataConfig(tfds_data_dir=FLAGS.tfds_data_dir)),
                   log=lambda _: None)
    examples, _ = task.read(spec, "distance_data")
    sentences = [text for e in examples[:pairs] for text in (e.premise, e.hypothesis)]

    def batches(preprocessor):
        lengths = preprocessor.token_ids(sentences).row_lengths().numpy()
        ordered = [sentences[i] for i in np.argsort(lengths, kind="stable")]
        for start in range(0, len(ordered), FLAGS.batch_size):
            # Padded as the model reads them; an empty sentence has no query to count.
            yield preprocessor.dense_ids(ordered[start:start + FLAGS.batch_size]).numpy()

    profiles = {}
    for workdir in workdirs:
        model, preprocessor, config = RunDirectory(workdir).load()
        try:
            profile = analysis.attention_by_distance(model.backbone, batches(preprocessor))
        except AnalysisUnavailable as error:
            raise program.UsageError(f"--workdir={workdir} is a {config['model']} run: "
                                     f"{error}") from None
        profile["distance_prior"] = config["model_config"].get("distance_prior")
        profiles[workdir] = profile
    return {"data": spec, "sentences": len(sentences), "runs": profiles}


@program.main
def main(argv):
    program.check_start(argv, output_dir="where to write the figures")
    from dsan_tf import plots  # TensorFlow loads here, not for --help

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    from experiments.rundir import RunDirectory

    figures = {}
    loaded = RunDirectory(FLAGS.workdir).load()
    model, preprocessor, _ = loaded
    if model.backbone.pair_input:
        figures.update(pair_figures(model, preprocessor, FLAGS.sentence, FLAGS.hypothesis))
    else:
        tokens, result, _ = analysed(FLAGS.workdir, FLAGS.sentence, loaded)
        figures.update(plots.sentence_figures(tokens, result, FLAGS.sentence))
    if FLAGS.compare_workdir:
        figures["fig08_compare"] = comparison((FLAGS.workdir, FLAGS.compare_workdir),
                                              FLAGS.long_sentence)
    if FLAGS.evaluation:
        figures["fig06_length"] = plots.accuracy_by_length(load_evaluations(FLAGS.evaluation))
    if FLAGS.distance_data:
        workdirs = [FLAGS.workdir] + ([FLAGS.compare_workdir] if FLAGS.compare_workdir else [])
        profiles = distance_profiles(workdirs, FLAGS.distance_data, FLAGS.distance_sentences)
        figures["attention_by_distance"] = plots.attention_by_distance(
            {f"{short_name(w)} (prior: {p['distance_prior']})": p
             for w, p in profiles["runs"].items()})
        path = os.path.join(FLAGS.output_dir, "attention_by_distance.json")
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(profiles, stream, indent=2)
        print(path)
    for stem, figure in figures.items():
        path = os.path.join(FLAGS.output_dir, f"{stem}.png")
        with open(path, "wb") as stream:
            stream.write(plots.png_bytes(figure))
        print(path)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
