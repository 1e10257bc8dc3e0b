"""Ships a finished run as a trained preset inside the package, loadable by name with no
training and no data (`dsan_tf.load(NAME)`, `NLIClassifier.from_preset(NAME)`), with a
model card that gives its accuracy on each evaluation source and the commands behind it.

    python -m tools.ship_preset --workdir=RUN --name=dsan_snli25k_glove50 \
        --data=../shared/data/snli/snli_1.0_dev.jsonl.gz \
        --data=../shared/data/multinli/multinli_1.0_dev_matched.jsonl.gz
    python -m tools.ship_preset --check=dsan_snli25k_glove50 --data=...   # evaluate it again

The preset goes to dsan_tf/models/<family>/trained/<name>/ (keras-hub's layout:
`dsan_tf.models.preset`), its family's folder. Its accuracies are measured on the preset as
written (read back by name), and must agree with the run's own dev accuracy; the check
mode repeats them from the shipped files and exits 1 if a figure of the card differs.
"""

import argparse
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARD_RESULTS = "results.json"  # the accuracies the card quotes, by source; the probes
# Pairs whose probabilities are recorded beside the accuracies, so that a clone without the
# data still checks that the shipped files give the same numbers (tests/test_presets.py).
PROBES = [("A man is playing a guitar on stage.", "A man is playing an instrument."),
          ("A man is playing a guitar on stage.", "A man is sleeping in his bed."),
          ("A man is playing a guitar on stage.", "A man is playing his favorite song."),
          ("Two dogs are running through a field.", "Animals are outside."),
          ("Two dogs are running through a field.", "The dogs are sleeping on the couch."),
          ("A woman is reading a book in the park.", "A person is reading.")]


def evaluate(name, sources):
    """{source: {"accuracy", "loss", "pairs", "dropped"}} of the preset `name` (loaded by
    name, as a user loads it) on each labelled source."""
    import dsan_tf
    from dsan_tf.data.sources import read_examples
    from dsan_tf.saving.serving import scores

    loaded = dsan_tf.load(name)
    results = {}
    for source in sources:
        examples, report = read_examples(source)
        pairs = ([e.premise for e in examples], [e.hypothesis for e in examples])
        result = scores(loaded.predict(pairs), [e.label for e in examples], loaded.label_names)
        result["dropped"] = dict(report.dropped)
        results[source] = {key: (round(value, 6) if isinstance(value, float) else value)
                           for key, value in result.items()}
    return results


def _card(run, name, description, results):
    """The run's model card with the preset's name, use and measured accuracies first."""
    from dsan_tf.saving import model_card

    sources = [f"- {source}: accuracy {r['accuracy']:.4f} on {r['pairs']:,} pairs "
               f"(loss {r['loss']:.4f}"
               + (f"; {sum(r['dropped'].values()):,} without a gold label dropped"
                  if r["dropped"] else "") + ")" for source, r in results.items()]
    data = " ".join(f"--data={source}" for source in results)
    lines = [f"# Trained preset `{name}`", "", description, "", "```python",
             "import dsan_tf", "", f'model = dsan_tf.load("{name}")  # or '
             f'dsan_tf.NLIClassifier.from_preset("{name}")',
             'print(model.classify("A man plays a guitar.", "A person makes music.")["labels"])',
             "```", "", "## Accuracy of this preset", "", *sources, "",
             f"Measured on the files shipped here, loaded by name: `python -m tools.ship_preset "
             f"--check={name} {data}` repeats it (a clone beside ../shared/data).",
             f"Written by `python -m tools.ship_preset --workdir={run.workdir} --name={name} "
             f"{data}` from the run below.", "", "## The run it comes from", ""]
    run_card = model_card.text(run).split("\n", 1)[1]  # its title is replaced by ours
    # The evaluation a user can repeat names the preset, not the folder it was made in.
    run_card = run_card.replace(f"dsan-evaluate --workdir={run.workdir} ",
                                f"dsan-evaluate --workdir={name} ")
    return "\n".join(lines) + re.sub(r"^## ", "### ", run_card, flags=re.M)


def ship(workdir, name, sources, description):
    """Writes the preset of the finished run `workdir` as `name`; its directory."""
    import dsan_tf
    from dsan_tf.core import rundir
    from dsan_tf.models import preset

    run = rundir.RunDirectory(workdir)
    run.require_finished()
    config = run.read_json(rundir.CONFIG)
    model = preset.load(workdir)  # compiled as the run trained it: its optimizer goes along
    target = os.path.join(ROOT, "dsan_tf", "models", config["model"], "trained", name)
    if os.path.isdir(target):
        shutil.rmtree(target)
    model.save_to_preset(target, description)
    results = evaluate(name, sources)
    dev = run.read_json(rundir.RESULTS).get("dev_accuracy")
    dev_source = config["data"]["dev_data"]
    if dev is not None and dev_source in results and abs(
            results[dev_source]["accuracy"] - dev) > 1e-3:
        sys.exit(f"the preset scores {results[dev_source]['accuracy']:.4f} on {dev_source} "
                 f"but its run recorded {dev:.4f}: not shipped as it is.")
    out = dsan_tf.load(name).classify([p for p, _ in PROBES], [h for _, h in PROBES])
    probes = [{"premise": p, "hypothesis": h, "label": label,
               "probabilities": [round(float(x), 6) for x in row]}
              for (p, h), label, row in zip(PROBES, out["labels"], out["probabilities"])]
    with open(os.path.join(target, CARD_RESULTS), "w", encoding="utf-8") as stream:
        json.dump({"sources": results, "probes": probes}, stream, indent=2)
        stream.write("\n")
    with open(os.path.join(target, "MODEL_CARD.md"), "w", encoding="utf-8") as stream:
        stream.write(_card(run, name, description, results))
    print(json.dumps(results, indent=2))
    print(f"{target}: {dsan_tf.presets()[name]}")
    return target


def check(name, sources):
    """Exit status 0 when the shipped preset still scores what its card says."""
    from dsan_tf.models import preset

    with open(os.path.join(preset.names()[name], CARD_RESULTS), encoding="utf-8") as stream:
        recorded = json.load(stream)["sources"]
    results = evaluate(name, sources)
    print(json.dumps(results, indent=2))
    differ = [source for source in results if source in recorded and
              abs(results[source]["accuracy"] - recorded[source]["accuracy"]) > 1e-4]
    for source in differ:
        print(f"{source}: {results[source]['accuracy']:.4f}, the card says "
              f"{recorded[source]['accuracy']:.4f}", file=sys.stderr)
    return 1 if differ else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", help="the finished run to ship")
    parser.add_argument("--name", help="the preset's name")
    parser.add_argument("--description", default="", help="what it is, one line")
    parser.add_argument("--data", action="append", default=[],
                        help="a labelled source to measure it on (repeat it)")
    parser.add_argument("--check", metavar="NAME", help="evaluate a shipped preset again")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.check, args.data)
    if not (args.workdir and args.name and args.data):
        parser.error("give --workdir, --name and --data (or --check=NAME)")
    ship(args.workdir, args.name, args.data, args.description)
    return 0


if __name__ == "__main__":
    sys.exit(main())
