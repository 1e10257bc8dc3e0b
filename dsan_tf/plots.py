"""Matplotlib figures of the paper's analysis (Figures 6-13). Each function returns a
`matplotlib.figure.Figure`; `png_bytes` turns one into PNG data (files, TensorBoard)."""

import io

import matplotlib

matplotlib.use("Agg")  # no screen needed
import matplotlib.pyplot as plt  # noqa: E402


def png_bytes(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def _heatmap(axis, tokens, weights, title, key_tokens=None):
    key_tokens = tokens if key_tokens is None else key_tokens
    axis.imshow(weights, cmap="Blues", vmin=0.0, vmax=max(float(weights.max()), 1e-6))
    axis.set_xticks(range(len(key_tokens)), key_tokens, rotation=90, fontsize=7)
    axis.set_yticks(range(len(tokens)), tokens, fontsize=7)
    axis.set_xlabel("key")
    axis.set_ylabel("query")
    axis.set_title(title, fontsize=9)


def attention_maps(tokens, forward, backward, title=""):
    """Figures 7, 12, 13: per-head and head-averaged attention [H, T, T], both directions."""
    heads = forward.shape[0]
    figure, axes = plt.subplots(2, heads + 1, figsize=(2.6 * (heads + 1), 5.6), squeeze=False)
    for row, (name, weights) in enumerate((("forward", forward), ("backward", backward))):
        for head in range(heads):
            _heatmap(axes[row, head], tokens, weights[head], f"{name} head {head + 1}")
        _heatmap(axes[row, heads], tokens, weights.mean(axis=0), f"{name} average")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def compare_attention(tokens, maps, titles):
    """Figure 8: head-averaged forward and backward maps of several models side by side.
    `maps` is a list of (forward [H, T, T], backward [H, T, T])."""
    figure, axes = plt.subplots(2, len(maps), figsize=(4.2 * len(maps), 8.4), squeeze=False)
    for column, ((forward, backward), title) in enumerate(zip(maps, titles)):
        _heatmap(axes[0, column], tokens, forward.mean(axis=0), f"{title}: forward")
        _heatmap(axes[1, column], tokens, backward.mean(axis=0), f"{title}: backward")
    figure.tight_layout()
    return figure


def word_bars(tokens, series, title):
    """Figures 9-11: one bar chart per named per-word series (dict name -> [T])."""
    figure, axes = plt.subplots(len(series), 1, figsize=(max(4.0, 0.5 * len(tokens)),
                                                          2.2 * len(series)), squeeze=False)
    for axis, (name, values) in zip(axes[:, 0], series.items()):
        axis.bar(range(len(tokens)), values, color="tab:blue")
        axis.set_xticks(range(len(tokens)), tokens, rotation=60, fontsize=8)
        axis.set_ylabel(name, fontsize=8)
    axes[0, 0].set_title(title)
    figure.tight_layout()
    return figure


def accuracy_by_length(runs):
    """Figure 6: accuracy against the pair's average length; `runs` maps a name to a list
    of `accuracy_by_length` buckets from `experiments.evaluate`."""
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for name, buckets in runs.items():
        centres = [(b["min_length"] + b["max_length"]) / 2 for b in buckets]
        axis.plot(centres, [b["accuracy"] for b in buckets], marker="o", label=name)
    axis.set_xlabel("average length of premise and hypothesis (tokens)")
    axis.set_ylabel("accuracy")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def attention_by_distance(runs):
    """Attention weight by query-key distance, forward and backward (`runs` maps a name to
    `dsan_tf.analysis.attention_by_distance`'s result); dashed: uniform attention over the
    same visible keys (the first run's; the same for every run); dotted: each run's
    distance prior alone, where it is not uniform."""
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for axis, side in zip(axes, ("forward", "backward")):
        for name, result in runs.items():
            mass = result[side]["mass"]
            line, = axis.plot(range(1, len(mass) + 1), mass, marker="o", label=(
                f"{name} (mean distance {result[side]['mean_distance']:.2f})"))
            prior = result[side]["prior_mass"]
            if abs(result[side]["prior_mean_distance"]
                   - result[side]["uniform_mean_distance"]) > 1e-6:
                axis.plot(range(1, len(prior) + 1), prior, ":", color=line.get_color(),
                          label=f"its prior alone ({result[side]['prior_mean_distance']:.2f})")
        first = next(iter(runs.values()))[side]
        axis.plot(range(1, len(first["uniform_mass"]) + 1), first["uniform_mass"], "k--",
                  label=f"uniform (mean distance {first['uniform_mean_distance']:.2f})")
        axis.set_xlabel(f"|i − j| (last: ≥ {len(first['mass'])})")
        axis.set_title(f"{side} block", fontsize=9)
        axis.legend(fontsize=7)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("attention weight per query")
    figure.tight_layout()
    return figure


def learning_curve(curves, title=""):
    """Dev accuracy against the number of training pairs; `curves` maps a model name to a
    list of (pairs, accuracy) points."""
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for name, points in curves.items():
        points = sorted(points)
        axis.plot([p for p, _ in points], [100 * a for _, a in points], marker="o", label=name)
    axis.set_xscale("log")
    axis.set_xlabel("training pairs (log scale)")
    axis.set_ylabel("dev accuracy (%)")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def sentence_figures(tokens, analysis, title=""):
    """The single-model figures of one sentence: {file stem: Figure}."""
    figures = {
        "fig07_attention": attention_maps(tokens, analysis["forward_attention"],
                                          analysis["backward_attention"], title),
        "fig09_fusion_gate": word_bars(
            tokens, {"mean gate (forward)": analysis["forward_gate"].mean(axis=-1)},
            "Figure 9: fusion gate per word"),
        "fig10_ffn": word_bars(tokens, {
            "inactive ReLU (fw)": analysis["forward_inactive_relu"],
            "inactive ReLU (bw)": analysis["backward_inactive_relu"],
            "max output (fw)": analysis["forward_output_max"],
            "max output (bw)": analysis["backward_output_max"]},
            "Figure 10: FFN activity per word"),
    }
    pooling = {"max-pool share": analysis["max_pool_share"]}
    if "s2t_weights" in analysis:
        pooling = {"source2token (mean)": analysis["s2t_weights"].mean(axis=-1), **pooling}
    figures["fig11_pooling"] = word_bars(tokens, pooling, "Figure 11: pooling per word")
    return figures


def pair_attention_figures(premise_tokens, hypothesis_tokens, attention, title=""):
    """A pair model's head-averaged attention, per block: {"self_attention": each block's
    self-attention of premise and hypothesis, "inter_attention": each interaction block's
    premise-to-hypothesis and hypothesis-to-premise maps}. `attention` is
    `dsan_tf.analysis.pair_analysis`'s list."""
    tokens = {"premise": premise_tokens, "hypothesis": hypothesis_tokens}
    figures = {}
    for name, kinds in (("self_attention", ("premise_self", "hypothesis_self")),
                        ("inter_attention", ("premise_to_hypothesis", "hypothesis_to_premise"))):
        entries = [entry for entry in attention if entry["kind"] in kinds]
        if not entries:
            continue
        blocks = list(dict.fromkeys(entry["block"] for entry in entries))
        figure, axes = plt.subplots(len(kinds), len(blocks), squeeze=False,
                                    figsize=(3.6 * len(blocks), 3.6 * len(kinds)))
        for entry in entries:
            row, column = kinds.index(entry["kind"]), blocks.index(entry["block"])
            query, _, key = entry["kind"].partition("_to_")
            query = query.replace("_self", "")
            _heatmap(axes[row, column], tokens[query], entry["weights"].mean(axis=0),
                     f"{entry['block']}: {entry['kind'].replace('_', ' ')}",
                     key_tokens=tokens[key or query])
        figure.suptitle(title)
        figure.tight_layout()
        figures[name] = figure
    return figures
