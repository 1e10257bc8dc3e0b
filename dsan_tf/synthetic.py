"""A small generated NLI task that can only be solved with word order.

Premise "the dog chased the cat"; the hypothesis is the same sentence (entailment), the
same words with subject and object swapped (contradiction: "the cat chased the dog"),
or one noun replaced by a noun absent from the premise (neutral). Entailment and
contradiction pairs contain exactly the same bag of words, so an order-blind model
cannot do better than about 2/3 accuracy. Used by the tests and the offline demo.
"""

import itertools
import random

from dsan_tf.labels import LABEL_IDS

NOUNS = ("dog", "cat", "man", "woman", "boy", "girl", "horse", "bird")
VERBS = ("chased", "saw", "pushed", "helped", "followed")


def _sentence(subject, verb, obj):
    return f"the {subject} {verb} the {obj}"


def word_order_pairs(seed=0):
    """All premises of the task, each with one hypothesis per label, shuffled.

    Returns:
        list of (premise, hypothesis, label_id) tuples (text is lower-case, space-separated).
    """
    rng = random.Random(seed)
    examples = []
    for subject, obj in itertools.permutations(NOUNS, 2):
        for verb in VERBS:
            premise = _sentence(subject, verb, obj)
            other = rng.choice([n for n in NOUNS if n not in (subject, obj)])
            neutral = (_sentence(other, verb, obj) if rng.random() < 0.5
                       else _sentence(subject, verb, other))
            examples.append((premise, premise, LABEL_IDS["entailment"]))
            examples.append((premise, _sentence(obj, verb, subject),
                             LABEL_IDS["contradiction"]))
            examples.append((premise, neutral, LABEL_IDS["neutral"]))
    rng.shuffle(examples)
    return examples


def vocabulary():
    """The task's words; index + 2 is the token id (0 padding, 1 unknown)."""
    return ("the",) + NOUNS + VERBS
