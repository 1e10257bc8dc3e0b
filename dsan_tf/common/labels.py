"""NLI label names and ids, the same everywhere in the project."""

LABELS = ("entailment", "neutral", "contradiction")
LABEL_IDS = {name: index for index, name in enumerate(LABELS)}


def labelled(probabilities, names, **extra):
    """A task model's `classify` result: `probabilities` [B, C] (in the order of `names`,
    the model's C label names), the label of each row's largest (`labels`), `label_names`
    and `extra`."""
    names = list(names)
    return {"probabilities": probabilities,
            "labels": [names[i] for i in probabilities.argmax(axis=-1)],
            "label_names": names, **extra}

# Two-way evaluation sets (HANS): their gold "non-entailment" covers neutral and
# contradiction. It has an id of its own, outside the model's classes: such data can be
# evaluated on (a three-way prediction other than entailment counts as non-entailment), not
# trained on.
NON_ENTAILMENT = "non-entailment"
NON_ENTAILMENT_ID = len(LABELS)
