"""The paper's analysis figures (Section 5.5) from trained runs, as PNG files.

    python -m experiments.visualize --workdir=DIR --sentence="A lady stands outside of a Mexican market." \
        [--compare_workdir=DIR2] [--evaluation=NAME=eval.json ...] --output_dir=DIR

Writes fig07_attention.png (per head and averaged, forward and backward), fig09_fusion_gate.png,
fig10_ffn.png, fig11_pooling.png; with --compare_workdir fig08_compare.png (average maps of both
runs on --long_sentence); with --evaluation fig06_length.png (accuracy by pair length).
All values come from the model's own intermediate outputs (dsan_tf.analysis).
"""

import json
import os

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS


def tokens_and_ids(vocab, sentence):
    from dsan_tf.data import tokenize

    tokens = [t.decode("utf-8") for t in tokenize([sentence], vocab.lowercase).to_list()[0]]
    if not tokens:
        run.fail("the sentence has no tokens.")
    return tokens, vocab.ids([sentence]).to_list()[0]


def load_evaluations(specs):
    runs = {}
    for spec in specs:
        name, _, path = spec.rpartition("=")
        if not os.path.isfile(path):
            run.fail(f"--evaluation file {path} does not exist.")
        with open(path, encoding="utf-8") as stream:
            results = json.load(stream)
        for source, result in results.get("sources", {}).items():
            runs[f"{name or results.get('workdir', path)}: {source}"] = result["accuracy_by_length"]
    if not runs:
        run.fail("no experiments.evaluate results found in --evaluation.")
    return runs


def main(argv):
    run.start(argv, output_dir="where to write the figures")
    from dsan_tf import analysis, plots

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    written = []

    def save(stem, figure):
        path = os.path.join(FLAGS.output_dir, f"{stem}.png")
        with open(path, "wb") as stream:
            stream.write(plots.png_bytes(figure))
        written.append(path)

    model, vocab, _ = run.load_run()
    try:
        tokens, ids = tokens_and_ids(vocab, FLAGS.sentence)
        for stem, figure in plots.sentence_figures(
                tokens, analysis.sentence_analysis(model, ids), FLAGS.sentence).items():
            save(stem, figure)
        if FLAGS.compare_workdir:
            maps, titles = [], []
            for workdir in (FLAGS.workdir, FLAGS.compare_workdir):
                other, other_vocab, other_config = run.load_run(workdir)
                long_tokens, long_ids = tokens_and_ids(other_vocab, FLAGS.long_sentence)
                result = analysis.sentence_analysis(other, long_ids)
                maps.append((result["forward_attention"], result["backward_attention"]))
                prior = other_config["model_config"].get("distance_prior", "?")
                titles.append(f"{os.path.basename(os.path.normpath(workdir))} "
                              f"(distance prior: {prior})")
            save("fig08_compare", plots.compare_attention(long_tokens, maps, titles))
    except ValueError as error:
        run.fail(str(error))
    if FLAGS.evaluation:
        save("fig06_length", plots.accuracy_by_length(load_evaluations(FLAGS.evaluation)))
    for path in written:
        print(path)


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
