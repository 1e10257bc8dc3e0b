"""A small generated NLI task that can only be solved with word order.

Premise "the dog chased the cat"; the hypothesis is the same sentence (entailment), the
same words with subject and object swapped (contradiction: "the cat chased the dog"),
or one noun replaced by a noun absent from the premise (neutral). Entailment and
contradiction pairs contain exactly the same bag of words, so an order-blind model
cannot do better than about 2/3 accuracy. Used by the tests and the offline demo.
"""

import itertools
import random

from dsan_tf.common.labels import LABEL_IDS
from dsan_tf.data.examples import Example

NOUNS = ("dog", "cat", "man", "woman", "boy", "girl", "horse", "bird")
VERBS = ("chased", "saw", "pushed", "helped", "followed")
SPLITS = ("all", "train", "dev")


def _sentence(subject, verb, obj):
    return f"the {subject} {verb} the {obj}"


def word_order_pairs(split="all", seed=0):
    """The task's pairs, one hypothesis per label for each premise, shuffled.

    Args:
        split: "all" (840 pairs), "train" (about 80% of the premises) or "dev" (the rest:
            subject/verb/object combinations never seen in training).
        seed: decides the neutral hypotheses and the order.

    Returns:
        list of `Example` (text is lower-case, space-separated).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    rng = random.Random(seed)
    examples = []
    for number, (subject, obj) in enumerate(itertools.permutations(NOUNS, 2)):
        for verb in VERBS:
            premise = _sentence(subject, verb, obj)
            other = rng.choice([n for n in NOUNS if n not in (subject, obj)])
            neutral = (_sentence(other, verb, obj) if rng.random() < 0.5
                       else _sentence(subject, verb, other))
            in_dev = (number + VERBS.index(verb)) % 5 == 0
            if split != "all" and in_dev != (split == "dev"):
                continue
            examples.append(Example(premise, premise, LABEL_IDS["entailment"]))
            examples.append(Example(premise, _sentence(obj, verb, subject),
                                    LABEL_IDS["contradiction"]))
            examples.append(Example(premise, neutral, LABEL_IDS["neutral"]))
    rng.shuffle(examples)
    return examples


def vocabulary():
    """The task's words, in the order of their ids in `Vocabulary(vocabulary())`."""
    return ("the",) + NOUNS + VERBS
