r"""How close our tokenizer is to the Stanford tokenization of the official SNLI files.

    python -m experiments.tokenizer_agreement --data=../shared/data/snli/snli_1.0_dev.jsonl.gz \
        [--data=../shared/data/multinli/multinli_1.0_dev_matched.jsonl.gz]

For a file with parses (SNLI 1.0 `.jsonl[.gz]`), the share of sentences whose tokens equal the
leaves of `sentence1_binary_parse` / `sentence2_binary_parse` (PTB escapes read back: `` and ''
as ", -LRB- / -RRB- as parentheses), with the first disagreements. For every file, the number
of sentences where a token boundary falls between two letters of one written word (other than
the PTB splits "do n't" and "can not"): accented letters split out of a word show up here.
"""

import gzip
import json

from absl import flags

from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS
SHOWN = 10  # disagreements printed per file


def define_flags():
    flags.DEFINE_multi_string("data", None, "A .jsonl[.gz] file of sentence pairs (SNLI's "
                              "with parses); repeat it for several files.")
    project_flags.require_existing("data")

_PTB_ESCAPES = {"``": '"', "''": '"', "-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]",
                "-LCB-": "{", "-RCB-": "}"}


def parse_leaves(binary_parse):
    """The tokens of an SNLI binary parse, PTB escapes read back."""
    return [_PTB_ESCAPES.get(token, token) for token in binary_parse.split()
            if token not in ("(", ")")]


def letter_splits(text, tokens):
    """Places where `tokens` cut one written word between two letters, as (left, right)."""
    cuts, position, previous_end, previous = [], 0, None, None
    for token in tokens:
        start = text.find(token, position)
        if start < 0:  # a rewritten token ("can not" from "cannot")
            previous_end = previous = None
            continue
        if (start == previous_end and previous[-1].isalpha() and token[0].isalpha()
                and token != "n't" and (previous.lower(), token) != ("can", "not")):
            cuts.append((previous, token))
        position = previous_end = start + len(token)
        previous = token
    return cuts


def read_sentences(path):
    """[(sentence, gold tokens or None)] of a .jsonl[.gz] file."""
    opener = gzip.open if path.endswith(".gz") else open
    sentences = []
    with opener(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            record = json.loads(line)
            for side in ("1", "2"):
                parse = record.get(f"sentence{side}_binary_parse")
                sentences.append((record[f"sentence{side}"], parse and parse_leaves(parse)))
    return sentences


def measure(path, show=SHOWN):
    """Agreement and letter splits of one file: a dict, and the lines to print."""
    from dsan_tf.data import tokenize

    sentences = read_sentences(path)
    texts = [text for text, _ in sentences]
    tokens = [[t.decode("utf-8") for t in row] for row in tokenize(texts).to_list()]
    result = {"sentences": len(texts),
              "letter_splits": sum(bool(letter_splits(text, t)) for text, t in zip(texts, tokens))}
    lines = [f"{path}: {result['letter_splits']} of {len(texts):,} sentences split a word "
             "between two letters"]
    gold = [(text, ours, theirs) for text, ours, (_, theirs) in zip(texts, tokens, sentences)
            if theirs is not None]
    if gold:
        differ = [(text, ours, theirs) for text, ours, theirs in gold if ours != theirs]
        result["agreement"] = 1 - len(differ) / len(gold)
        lines.append(f"{path}: {len(gold) - len(differ):,} of {len(gold):,} sentences "
                     f"({result['agreement']:.2%}) tokenized exactly as the Stanford parse")
        for text, ours, theirs in differ[:show]:
            lines.append(f"  {text!r}: ours {[t for t in ours if t not in theirs]}, "
                         f"Stanford {[t for t in theirs if t not in ours]}")
    return result, lines


@program.main
def main(argv):
    program.check_start(argv, data="a .jsonl[.gz] file of sentence pairs")
    for path in FLAGS.data:
        try:
            _, lines = measure(path)
        except (OSError, ValueError, KeyError) as error:
            raise program.UsageError(f"--data={path} is not a readable .jsonl file of "
                                     f"sentence1/sentence2 pairs ({error}).") from None
        print("\n".join(lines))


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
