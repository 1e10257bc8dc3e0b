"""A model card (Mitchell et al. 2019, shortened) for a finished run: what it was trained on,
with which vectors and settings, how well it did and how to repeat that, what it is for and
where it stops being trustworthy. Training writes MODEL_CARD.md into the run directory;
every export (`dsan_tf.export`) writes it beside the SavedModel.
"""

import os
import re

from dsan_tf import rundir as run_files
from dsan_tf.models import registry

CARD = run_files.CARD
PAPER_SNLI_PAIRS = 549_367


def _paper(model):
    try:
        return registry.family(model).paper
    except ValueError:  # a run of a family this version no longer has
        return "see docs/FIDELITY.md"


def _flags(run):
    path = run.path(run_files.FLAGFILE)
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as stream:
        return " ".join(line.strip() for line in stream if line.strip())


def text(run):
    """The card of a finished run (`RunDirectory`) as Markdown."""
    config = run.read_json(run_files.CONFIG)
    results = run.read_json(run_files.RESULTS) if run.exists(run_files.RESULTS) else {}
    data = config.get("data", {})
    embeddings = config.get("embeddings", {})
    model = config.get("model", "?")
    params = config.get("parameters", {}).get("params_excluding_embeddings")
    metrics = [f"- {split} accuracy: {results[f'{split}_accuracy']:.4f} (best epoch "
               f"{results.get('best_epoch')} of {results.get('epochs')})"
               for split in ("dev", "test") if f"{split}_accuracy" in results]
    limits = ["- Trained for natural language inference on English sentence pairs "
              "(entailment, neutral, contradiction); other tasks, languages or label sets "
              "are out of scope.",
              "- NLI models learn annotation artifacts (e.g. negation words signalling "
              "contradiction); check it on a stress set before trusting it elsewhere.",
              f"- Words outside its vocabulary ({config.get('vocab_size', '?'):,} ids) are "
              "read as one unknown word."]
    train = data.get("train", "")
    found = re.search(r"([\d,]+) examples", train)
    pairs = int(found.group(1).replace(",", "")) if found else None
    if "snli" in train.lower() and pairs and pairs < PAPER_SNLI_PAIRS:
        limits.insert(0, f"- Trained on {pairs:,} SNLI pairs ({pairs / PAPER_SNLI_PAIRS:.1%} "
                         "of SNLI train): not the paper's setting; expect accuracy far below "
                         "the paper's.")
    width = config.get("model_config", {}).get("embedding_dim")
    if width and width != 300:
        limits.insert(0, f"- {width}-d word vectors, not the papers' 300-d.")
    lines = [
        f"# Model card: {model}", "",
        f"- Model: `{model}` ({_paper(model)}), "
        f"{params:,} trainable parameters excluding word embeddings." if params else
        f"- Model: `{model}`.",
        f"- Training data: {train or 'unknown'}.",
        f"- Selected on: {data.get('dev', 'unknown')}.",
        f"- Word vectors: {embeddings.get('source', 'random')} "
        f"({embeddings.get('types_found', '?')} of {embeddings.get('vocab_types', '?')} "
        "vocabulary words found); lower-cased: "
        f"{config.get('lowercase')}; at most {config.get('max_length')} tokens a sentence.",
        f"- Trained with: `python -m experiments.train {_flags(run)}`", "",
        "## Metrics", "", *(metrics or ["- none recorded"]),
        "", f"Repeat the evaluation: `python -m experiments.evaluate --workdir={run.workdir} "
        "--data=SPEC`.", "",
        "## Intended use and limits", "", *limits, "",
        f"Provenance: {config.get('provenance', {})}.", ""]
    return "\n".join(lines)


def write(run, directory=None):
    """Writes the run's card into `directory` (the run directory by default); its path."""
    path = os.path.join(directory or run.workdir, CARD)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text(run))
    return path


def write_ensemble(runs, results, directory):
    """Writes the card of an ensemble of `runs` (`RunDirectory`s) into `directory`: how
    it combines, its accuracy on each source of `results` ({spec: {"ensemble": report}}),
    and each member's own card, its headings one level down. Returns its path."""
    lines = [f"# Model card: an ensemble of {len(runs)} runs", "",
             "The mean of the members' class probabilities (AF-DMN, Section 5.3). Its limits "
             "are its members' (below); their model files are in "
             f"{run_files.MEMBERS}/1, {run_files.MEMBERS}/2, ... in this order.", "",
             "## Metrics", ""]
    lines += [f"- {spec}: accuracy {source['ensemble']['accuracy']:.4f}"
              for spec, source in results.items()] or ["- none measured (give --data)"]
    lines += ["", "## Members", ""]
    for run in runs:
        card = ("\n" + text(run)).replace("\n# ", "\n#### ").replace("\n## ", "\n#### ")
        lines += [f"### {run.workdir}", card]
    path = os.path.join(directory, CARD)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("\n".join(lines))
    return path
