"""Labels and probabilities for raw text, from a trained run.

    python -m experiments.predict --workdir=DIR --premise="A man sleeps." --hypothesis="A person rests."
    python -m experiments.predict --workdir=DIR --input=pairs.jsonl   # sentence1, sentence2 per line

Prints one JSON object per pair: premise, hypothesis, label, probabilities.
"""

import json

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS
BATCH = 256


def read_pairs(path):
    from dsan_tf.data import DataError

    pairs = []
    try:
        with open(path, encoding="utf-8") as stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    pairs.append((record["sentence1"], record["sentence2"]))
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    raise DataError(f"{path}:{number}: expected a JSON object with sentence1 "
                                    f"and sentence2 ({error}).") from None
    except FileNotFoundError:
        raise DataError(f"input file {path} does not exist.") from None
    except UnicodeDecodeError:
        raise DataError(f"{path} is not valid UTF-8.") from None
    return pairs


def main(argv):
    run.start(argv)
    if bool(FLAGS.input) == bool(FLAGS.premise or FLAGS.hypothesis):
        run.fail("give either --premise and --hypothesis, or --input=FILE.jsonl.")
    if not FLAGS.input and not (FLAGS.premise and FLAGS.hypothesis):
        run.fail("give both --premise and --hypothesis.")
    from dsan_tf.data import DataError
    from dsan_tf.serving import TextPairClassifier

    try:
        pairs = read_pairs(FLAGS.input) if FLAGS.input else [(FLAGS.premise, FLAGS.hypothesis)]
    except DataError as error:
        run.fail(str(error))
    model, vocab, config = run.load_run()
    classifier = TextPairClassifier(model, vocab, config["max_length"])
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start:start + BATCH]
        out = classifier.classify([p for p, _ in chunk], [h for _, h in chunk])
        names = [n.decode() for n in out["label_names"].numpy()]
        for (premise, hypothesis), label, probabilities in zip(
                chunk, out["label"].numpy(), out["probabilities"].numpy()):
            print(json.dumps({"premise": premise, "hypothesis": hypothesis,
                              "label": label.decode(),
                              "probabilities": dict(zip(names, map(float, probabilities)))}))


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
