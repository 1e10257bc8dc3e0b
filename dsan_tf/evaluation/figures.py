"""The paper's analysis figures (Section 5.5) of trained runs: what `dsan-visualize`
draws, from each model's own intermediate outputs (`dsan_tf.evaluation.analysis`) drawn by
`dsan_tf.evaluation.plots`. Runs are `dsan_tf.core.rundir.RunDirectory`s; a run
whose model cannot show a figure raises `UsageError` naming it.
"""

import os


from dsan_tf.common.errors import UsageError
from dsan_tf.evaluation import analysis, plots
from dsan_tf.evaluation.analysis import AnalysisUnavailable
from dsan_tf.core.task import NLITask


def _unavailable(run, config, error):
    return UsageError(f"--workdir={run.workdir} is a {config['model']} run: {error}")


def analysed(run, sentence, loaded=None):
    """(tokens, `analysis.sentence_analysis`, config dict) of `run`'s model on `sentence`;
    `loaded`: the run's `load()` if already made."""
    model, preprocessor, config = loaded or run.load()
    tokens = preprocessor.tokens(sentence)
    if not tokens:
        raise UsageError("the sentence has no tokens.")
    ids = preprocessor.token_ids([sentence]).to_list()[0]
    try:
        return tokens, analysis.sentence_analysis(model.backbone, ids), config
    except AnalysisUnavailable as error:
        raise _unavailable(run, config, error) from None


def run_figures(run, sentence, hypothesis):
    """{file stem: figure} of one run: a sentence encoder's Figures 7, 9, 10 and 11 of
    `sentence`; a pair model's self- and inter-attention of (`sentence`, `hypothesis`)."""
    loaded = run.load()
    model, preprocessor, _ = loaded
    if not model.backbone.pair_input:
        tokens, result, _ = analysed(run, sentence, loaded)
        return plots.sentence_figures(tokens, result, sentence)
    tokens = [preprocessor.tokens(text) for text in (sentence, hypothesis)]
    if not all(tokens):
        raise UsageError("--sentence and --hypothesis must each have a token.")
    ids = [preprocessor.token_ids([text]).to_list()[0] for text in (sentence, hypothesis)]
    attention = analysis.pair_analysis(model.backbone, *ids)
    return plots.pair_attention_figures(*tokens, attention, f"{sentence} / {hypothesis}")


def prior_label(run_config):
    """"distance prior: linear", or, for a family without one (DiSAN), "disan: no
    distance prior" (it read "distance prior: ?")."""
    prior = run_config["model_config"].get("distance_prior")
    if prior is None:
        return f"{run_config.get('model', 'this model')}: no distance prior"
    return f"distance prior: {prior}"


def comparison(runs, sentence):
    """Figure 8: the average attention maps of two runs on one sentence."""
    maps, titles = [], []
    for run in runs:
        tokens, result, config = analysed(run, sentence)
        maps.append((result["forward_attention"], result["backward_attention"]))
        name = os.path.basename(os.path.normpath(run.workdir))
        titles.append(f"{name} ({prior_label(config)})")
    return plots.compare_attention(tokens, maps, titles)


def distance_profiles(runs, config, spec, pairs):
    """{"data", "sentences", "runs": {workdir: `analysis.attention_by_distance`}} over both
    sentences of the first `pairs` pairs of the source `spec`, read as `config`
    (`ExperimentConfig`: TFDS directory, batch size) says."""
    task = NLITask(config, log=lambda _: None)
    examples, _ = task.read(spec, "distance_data")
    sentences = [text for e in examples[:pairs] for text in (e.premise, e.hypothesis)]
    profiles = {}
    for run in runs:
        model, preprocessor, run_config = run.load()
        batches, _ = preprocessor.sentence_batches(sentences, config.data.batch_size,
                                                   by_length=True)
        batches = batches.as_numpy_iterator()
        try:
            profile = analysis.attention_by_distance(model.backbone, batches)
        except AnalysisUnavailable as error:
            raise _unavailable(run, run_config, error) from None
        profile["distance_prior"] = run_config["model_config"].get("distance_prior")
        profile["label"] = prior_label(run_config)
        profiles[run.workdir] = profile
    return {"data": spec, "sentences": len(sentences), "runs": profiles}


def distance_figure(profiles):
    """The attention-by-distance figure of `distance_profiles`, each run named by its
    directory's last two parts (study runs all end in seedN) and its prior."""
    named = {}
    for workdir, profile in profiles["runs"].items():
        name = "/".join(os.path.normpath(workdir).split(os.sep)[-2:])
        label = profile.get("label") or f"distance prior: {profile['distance_prior']}"
        named[f"{name} ({label})"] = profile
    return plots.attention_by_distance(named)
