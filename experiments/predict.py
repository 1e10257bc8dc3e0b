"""Labels and probabilities for raw text, from a trained run.

    python -m experiments.predict --workdir=DIR --premise="A man sleeps." --hypothesis="A person rests."
    python -m experiments.predict --workdir=DIR --input=pairs.jsonl   # sentence1, sentence2 per line

Prints one JSON object per pair: premise, hypothesis, label, probabilities.
"""

import json

from absl import flags

from experiments import flags as project_flags
from experiments import program

FLAGS = project_flags.FLAGS
BATCH = 256


def define_flags():
    project_flags.define_workdir_flag()
    flags.DEFINE_string("premise", None, "A premise.")
    flags.DEFINE_string("hypothesis", None, "A hypothesis.")
    flags.DEFINE_string("input", None, "A .jsonl file of sentence1/sentence2 objects.")


def read_pairs(path):
    """(premise, hypothesis) pairs of a .jsonl file; `UsageError` naming file and line."""
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
                    raise program.UsageError(
                        f"{path}:{number}: expected a JSON object with sentence1 and "
                        f"sentence2 ({error}).") from None
    except FileNotFoundError:
        raise program.UsageError(f"input file {path} does not exist.") from None
    except UnicodeDecodeError:
        raise program.UsageError(f"{path} is not valid UTF-8.") from None
    return pairs


@program.main
def main(argv):
    program.check_start(argv)
    if bool(FLAGS.input) == bool(FLAGS.premise or FLAGS.hypothesis):
        raise program.UsageError("give either --premise and --hypothesis, or --input=FILE.jsonl.")
    if not FLAGS.input and not (FLAGS.premise and FLAGS.hypothesis):
        raise program.UsageError("give both --premise and --hypothesis.")
    pairs = read_pairs(FLAGS.input) if FLAGS.input else [(FLAGS.premise, FLAGS.hypothesis)]
    from dsan_tf.serving import Predictor  # TensorFlow loads here, not for --help
    from experiments.rundir import RunDirectory

    predictor = Predictor(*RunDirectory(FLAGS.workdir).load()[:2])
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start:start + BATCH]
        out = predictor.classify([p for p, _ in chunk], [h for _, h in chunk])
        names = [n.decode() for n in out["label_names"].numpy()]
        for (premise, hypothesis), label, probabilities in zip(
                chunk, out["label"].numpy(), out["probabilities"].numpy()):
            print(json.dumps({"premise": premise, "hypothesis": hypothesis,
                              "label": label.decode(),
                              "probabilities": dict(zip(names, map(float, probabilities)))}))


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
