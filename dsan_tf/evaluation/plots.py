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


def _heatmap(axis, tokens, weights, title, key_tokens=None, row_labels=True,
             column_labels=True):
    """One attention map on the fixed scale 0-1 (so one colour bar serves a figure)."""
    key_tokens = tokens if key_tokens is None else key_tokens
    image = axis.imshow(weights, cmap="Blues", vmin=0.0, vmax=1.0)
    axis.set_xticks(range(len(key_tokens)), key_tokens, rotation=90, fontsize=7)
    axis.set_yticks(range(len(tokens)), tokens if row_labels else [], fontsize=7)
    if column_labels:
        axis.set_xlabel("attended word (key)", fontsize=8)
    if row_labels:
        axis.set_ylabel("attending word (query)", fontsize=8)
    axis.set_title(title, fontsize=9)
    return image


def _colour_bar(figure, image, axes):
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention weight (0-1)")


def attention_maps(tokens, forward, backward, title=""):
    """Figures 7, 12, 13: per-head and head-averaged attention [H, T, T], both directions;
    each row of a map (one attending word) sums to 1 over the words it may see."""
    heads = forward.shape[0]
    columns = heads + 1 if heads > 1 else 1  # one map (DiSAN's): no mean beside it
    figure, axes = plt.subplots(2, columns, figsize=(2.7 * columns + 1.2, 6.2),
                                squeeze=False, layout="constrained")
    for row, (name, weights) in enumerate((("forward", forward), ("backward", backward))):
        for column in range(columns):
            values = weights[column] if column < heads else weights.mean(axis=0)
            label = (f"head {column + 1}" if heads > 1 else "its one map") \
                if column < heads else "mean of the heads"
            image = _heatmap(axes[row, column], tokens, values, f"{name} block, {label}",
                             row_labels=column == 0, column_labels=row == 1)
    _colour_bar(figure, image, axes)
    sentence = f' in "{title}"' if title else ""
    figure.suptitle(f"Figure 7: where each word attends{sentence} (forward block: earlier "
                    "words; backward block: later words)", fontsize=10)
    return figure


def compare_attention(tokens, maps, titles):
    """Figure 8: head-averaged forward and backward maps of several models side by side.
    `maps` is a list of (forward [H, T, T], backward [H, T, T])."""
    figure, axes = plt.subplots(2, len(maps), figsize=(4.4 * len(maps) + 1.2, 8.8),
                                squeeze=False, layout="constrained")
    for column, ((forward, backward), title) in enumerate(zip(maps, titles)):
        _heatmap(axes[0, column], tokens, forward.mean(axis=0),
                 f"{title}\nforward block, mean of the heads", row_labels=column == 0,
                 column_labels=False)
        image = _heatmap(axes[1, column], tokens, backward.mean(axis=0),
                         f"{title}\nbackward block, mean of the heads",
                         row_labels=column == 0)
    _colour_bar(figure, image, axes)
    figure.suptitle("Figure 8: attention of the models compared, on one sentence", fontsize=10)
    return figure


def word_bars(tokens, panels, title):
    """Figures 9-11: one bar chart per panel, a bar per word. `panels` maps each panel's
    title to (its y-axis label, values [T])."""
    figure, axes = plt.subplots(len(panels), 1, figsize=(max(5.0, 0.55 * len(tokens)),
                                                          2.5 * len(panels)),
                                squeeze=False, layout="constrained")
    for axis, (name, (label, values)) in zip(axes[:, 0], panels.items()):
        axis.bar(range(len(tokens)), values, color="tab:blue")
        axis.set_xticks(range(len(tokens)), tokens, rotation=60, fontsize=8)
        axis.set_ylabel(label, fontsize=8)
        axis.set_title(name, fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(title, fontsize=10)
    return figure


MIN_BUCKET_PAIRS = 50


def merge_small_buckets(buckets, minimum=MIN_BUCKET_PAIRS):
    """Length buckets with at least `minimum` pairs each: a smaller bucket is merged with
    its neighbours (the tail into the last big enough one), its accuracy weighted by pairs
    and its "centre" the pairs' mean length as its buckets tell it (each bucket's pairs at
    its middle). A source with fewer than `minimum` pairs in all stays one bucket."""
    merged = []
    for bucket in buckets:
        bucket = {**bucket, "centre": (bucket["min_length"] + bucket["max_length"]) / 2}
        if merged and merged[-1]["examples"] < minimum:
            merged[-1] = _joined(merged[-1], bucket)
        else:
            merged.append(bucket)
    if len(merged) > 1 and merged[-1]["examples"] < minimum:
        merged[-2:] = [_joined(merged[-2], merged[-1])]
    return merged


def _joined(first, second):
    examples = first["examples"] + second["examples"]

    def mean(key):
        return (first[key] * first["examples"]
                + second[key] * second["examples"]) / max(examples, 1)
    return {"min_length": first["min_length"], "max_length": second["max_length"],
            "examples": examples, "accuracy": mean("accuracy"),
            "centre": mean("centre") if examples else (first["centre"] + second["centre"]) / 2}


def accuracy_by_length(runs, minimum=MIN_BUCKET_PAIRS):
    """Figure 6: accuracy against the pair's average length (top) and how many pairs each
    point stands for (bottom); `runs` maps a name to a list of `accuracy_by_length`
    buckets from `dsan-evaluate`. Buckets under `minimum` pairs are merged with
    their neighbours, so that no point rests on a handful of pairs."""
    figure, (axis, counts) = plt.subplots(
        2, 1, figsize=(7, 5.2), sharex=True, height_ratios=(2.2, 1), layout="constrained")
    for name, buckets in runs.items():
        buckets = merge_small_buckets(buckets, minimum)
        # Each point at its pairs' mean length, its bar spanning the lengths it merged (a
        # merged bucket's point at its middle hid where most of its pairs were).
        accuracies = [100 * b["accuracy"] for b in buckets]
        line, = axis.plot([b["centre"] for b in buckets], accuracies, marker="o", label=name)
        axis.hlines(accuracies, [b["min_length"] for b in buckets],
                    [b["max_length"] for b in buckets], colors=line.get_color(), alpha=0.5)
        counts.stairs([b["examples"] for b in buckets],
                      [buckets[0]["min_length"], *(b["max_length"] for b in buckets)],
                      color=line.get_color(), label=name)
    axis.set_ylabel("accuracy (%)")
    axis.grid(alpha=0.3)
    axis.set_title(f"Figure 6: accuracy by sentence length (buckets of fewer than {minimum} "
                   "pairs merged)", fontsize=10)
    counts.set_ylabel("pairs per point")
    counts.set_xlabel("average length of premise and hypothesis (tokens)")
    counts.grid(alpha=0.3)
    figure.legend(*axis.get_legend_handles_labels(), loc="outside lower center", fontsize=8,
                  ncols=min(len(runs), 2))
    return figure


def attention_by_distance(runs):
    """Attention weight by query-key distance, forward and backward (`runs` maps a name to
    `dsan_tf.evaluation.analysis.attention_by_distance`'s result); dashed: uniform
    attention over the same visible keys (the first run's; the same for every run);
    dotted: each run's distance prior alone, where it is not uniform."""
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


def training_curves(histories, title=""):
    """Train (solid) and dev (dashed) accuracy, and the learning rate, against training
    steps; `histories` maps a row name to its per-epoch rows (history.csv: `steps`,
    `accuracy`, `val_accuracy`, `learning_rate`). Under-fitting shows as train accuracy
    still rising when a run stops; over-fitting as a widening train-dev gap."""
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True,
                                         gridspec_kw={"height_ratios": [3, 1]})
    # Ten default colours repeat from the eleventh row: more rows take tab20's twenty.
    palette = ([f"C{i}" for i in range(10)] if len(histories) <= 10 else
               [plt.get_cmap("tab20")(i) for i in range(20)])
    for index, (name, rows) in enumerate(histories.items()):
        colour = palette[index % len(palette)]
        steps = [row["steps"] for row in rows]
        top.plot(steps, [100 * row["accuracy"] for row in rows], color=colour, label=name)
        top.plot(steps, [100 * row["val_accuracy"] for row in rows], color=colour,
                 linestyle="--")
        # The rate an epoch ended with holds over its steps (a halving is a step).
        bottom.plot(steps, [row["learning_rate"] for row in rows], color=colour,
                    drawstyle="steps-pre")
    top.set_ylabel("accuracy (%)")
    top.set_title(title, fontsize=9)
    top.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    top.grid(alpha=0.3)
    bottom.set_yscale("log")
    bottom.set_ylabel("learning rate")
    bottom.set_xlabel("training steps")
    bottom.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def sentence_figures(tokens, analysis, title=""):
    """The single-model figures of one sentence: {file stem: Figure}."""
    figures = {
        "fig07_attention": attention_maps(tokens, analysis["forward_attention"],
                                          analysis["backward_attention"], title),
        "fig09_fusion_gate": word_bars(tokens, {
            "forward block": ("mean gate: share kept\nfrom the word itself",
                              analysis["forward_gate"].mean(axis=-1))},
            "Figure 9: fusion gate per word (1: the word's own projection; 0: its context)"),
    }
    if "forward_inactive_relu" in analysis:  # a model with an FFN (DSAN; not DiSAN)
        figures["fig10_ffn"] = word_bars(tokens, {
            "forward block: FFN units that are off": (
                "share of ReLU units\nat zero", analysis["forward_inactive_relu"]),
            "backward block: FFN units that are off": (
                "share of ReLU units\nat zero", analysis["backward_inactive_relu"]),
            "forward block: FFN output": (
                "largest output\nvalue", analysis["forward_output_max"]),
            "backward block: FFN output": (
                "largest output\nvalue", analysis["backward_output_max"])},
            "Figure 10: activity of the position-wise feed-forward network per word")
    pooling = {"max pooling": ("share of the sentence\nvector's dimensions",
                               analysis["max_pool_share"])}
    if "s2t_weights" in analysis:
        pooling = {"source2token attention": (
            "weight, mean over\ndimensions", analysis["s2t_weights"].mean(axis=-1)), **pooling}
    figures["fig11_pooling"] = word_bars(
        tokens, pooling, "Figure 11: how much each word contributes to the sentence vector")
    return figures


def pair_attention_figures(premise_tokens, hypothesis_tokens, attention, title=""):
    """A pair model's head-averaged attention, per block: {"self_attention": each block's
    self-attention of premise and hypothesis, "inter_attention": each interaction block's
    premise-to-hypothesis and hypothesis-to-premise maps}. `attention` is
    `dsan_tf.evaluation.analysis.pair_analysis`'s list."""
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
