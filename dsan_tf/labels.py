"""NLI label names and ids, the same everywhere in the project."""

LABELS = ("entailment", "neutral", "contradiction")
LABEL_IDS = {name: index for index, name in enumerate(LABELS)}
