"""A model card (Mitchell et al. 2019, shortened) for a finished run: what it was trained on,
with which vectors and settings, how well it did and how to repeat that, what it is for and
where it stops being trustworthy. Training writes MODEL_CARD.md into the run directory;
every export (`dsan_tf.saving.export`) writes it beside the SavedModel.
"""

import dataclasses
import os
import shlex

from dsan_tf.common import atomic, progress
from dsan_tf.common.errors import UsageError
from dsan_tf.core import rundir as run_files
from dsan_tf.core.config import ExperimentConfig
from dsan_tf.models import registry

CARD = run_files.CARD
PAPER_SNLI_PAIRS = 549_367


def _paper(model):
    try:
        return registry.family(model).paper
    except ValueError:  # a run of a family this version no longer has
        return "see docs/FIDELITY.md"


def command(config, workdir):
    """The command that repeats the run of `config`: its fields that differ from its
    family's defaults (the preset-free flags, its own family's only)."""
    defaults = ExperimentConfig(model=config.model).flat()
    parts = [run_files.as_flag(name, value)
             for name, value in run_files.flag_values(config).items()
             if name == "model" or value != defaults.get(name)]
    # Quoted for a POSIX shell: a value or path with spaces or quotes is one argument.
    return shlex.join(["dsan-train", *(p for p in parts if p), f"--workdir={workdir}"])


def _read(report, pairs=None):
    """A split's line: its source, the pairs read and dropped (and used, when fewer)."""
    if not report:
        return "none"
    dropped = report.get("dropped", {})
    text = f"{report['source']}, {progress.pairs(report['kept'])} read"
    if dropped:
        text += (f", {sum(dropped.values()):,} dropped (" +
                 ", ".join(f"{why}: {count:,}" for why, count in dropped.items()) + ")")
    if pairs is not None and pairs != report["kept"]:
        text += f", a random subset of {pairs:,} trained on"
    return text


def _vectors(embeddings, trainable):
    state = "trained" if trainable else "frozen"
    if embeddings.get("source", "random") == "random":
        return f"random, {state} (no vector file)"
    return (f"{embeddings['source']}, {state}: {embeddings['types_found']:,} of "
            f"{embeddings['vocab_types']:,} vocabulary words found")


def _length(max_length):
    return (f"at most {max_length} tokens a sentence" if max_length
            else "sentences read whole (no max_length)")


def _limits(config, facts, pairs):
    width = config.model_config.embedding_dim
    tokens = facts.get("tokens", {}).get("train", {})
    limits = [
        "- Trained for natural language inference on English sentence pairs (entailment, "
        "neutral, contradiction); other tasks, languages or label sets are out of scope.",
        "- NLI models learn annotation artifacts (e.g. negation words signalling "
        "contradiction); check it on a stress set before trusting it elsewhere.",
        f"- Words outside its vocabulary ({facts['vocab_size']:,} ids) are read as one "
        "unknown word."]
    if tokens.get("truncated_premises") or tokens.get("truncated_hypotheses"):
        limits.append(f"- Sentences are cut at {config.data.max_length} tokens: "
                      f"{tokens['truncated_premises']:,} premises and "
                      f"{tokens['truncated_hypotheses']:,} hypotheses of the training pairs "
                      "were.")
    if width != 300:
        limits.insert(0, f"- {width}-d word vectors, not the papers' 300-d.")
    if "snli" in (config.data.train_data or "").lower() and pairs and \
            pairs < PAPER_SNLI_PAIRS:
        limits.insert(0, f"- Trained on {pairs:,} SNLI pairs ({pairs / PAPER_SNLI_PAIRS:.1%} "
                         "of SNLI train): not the paper's setting; expect accuracy far below "
                         "the paper's.")
    return limits


def text(run):
    """The card of a finished run (`RunDirectory`) as Markdown, from its configuration
    and what it found (config.json) and its results."""
    facts = run.read_json(run_files.CONFIG)
    config = run_files.recorded_config(facts)
    if config is None:
        raise UsageError(f"{run.path(run_files.CONFIG)} does not record the run's "
                         "configuration (dsan_tf 0.2 or earlier): no card can be written.")
    results = run.read_json(run_files.RESULTS) if run.exists(run_files.RESULTS) else {}
    read = facts.get("read", {})
    pairs = facts.get("tokens", {}).get("train", {}).get("examples")
    params = facts["parameters"]["params_excluding_embeddings"]
    metrics = [f"- {split} accuracy: {results[f'{split}_accuracy']:.4f} (best epoch "
               f"{results.get('best_epoch')} of {results.get('epochs')})"
               for split in ("dev", "test") if f"{split}_accuracy" in results]
    vectors = _vectors(facts.get("embeddings", {}), config.model_config.trainable_embeddings)
    hyper = ", ".join(f"{name}={value}" for name, value
                      in dataclasses.asdict(config.model_config).items() if value is not None)
    lines = [
        f"# Model card: {config.model}", "",
        f"- Model: `{config.model}` ({_paper(config.model)}), {params:,} trainable "
        "parameters excluding word embeddings.",
        f"- Hyperparameters: {hyper}.",
        f"- Training data: {_read(read.get('train'), pairs)}.",
        f"- Selected on: {_read(read.get('dev'))}.",
        f"- Word vectors: {vectors}; lower-cased: {config.data.lowercase}; "
        f"{_length(config.data.max_length)}.",
        f"- Trained with: `{command(config, run.workdir)}`", "",
        "## Metrics", "", *(metrics or ["- none recorded"]),
        "", "Repeat the evaluation: `" + shlex.join([
            "dsan-evaluate", f"--workdir={run.workdir}", f"--data={config.data.dev_data}"])
        + "`.", "",
        "## Intended use and limits", "", *_limits(config, facts, pairs), "",
        f"Provenance: {facts.get('provenance', {})}.", ""]
    return "\n".join(lines)


def write(run, directory=None):
    """Writes the run's card into `directory` (the run directory by default); its path."""
    path = os.path.join(directory or run.workdir, CARD)
    atomic.write_text(path, text(run))
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
    atomic.write_text(path, "\n".join(lines))
    return path
