"""What the model computes for one sentence, read from its own intermediate outputs
(the paper's Section 5.5, Figures 7-13). Nothing is recomputed outside the model.

Shape legend: T tokens, H heads, D word width (d_e), F FFN hidden width.
"""

import numpy as np
from dsan_tf.common.frameworks import ops

from dsan_tf.layers import masks


class AnalysisUnavailable(ValueError):
    """The backbone has no intermediate values of the kind asked for (e.g. no attention)."""


def _intermediates(backbone, kind):
    """The backbone's `kind` method ("sentence_intermediates" or "pair_intermediates"), or
    `AnalysisUnavailable` saying in one sentence what it cannot show."""
    method = getattr(backbone, kind, None)
    if method is not None:
        return method
    name = backbone.__class__.__name__
    if kind == "sentence_intermediates":
        raise AnalysisUnavailable(
            f"a {name} has no attention, fusion gate or pooling weights to draw (the "
            "sentence figures, Figures 7-11, show a DSAN's or a DiSAN's).")
    raise AnalysisUnavailable(f"a {name} reads one sentence at a time: its figures are the "
                              "sentence figures (--sentence), not premise-hypothesis attention.")


def sentence_analysis(backbone, ids):
    """Intermediate values of a sentence encoder for one sentence.

    Args:
        backbone: a backbone with `sentence_intermediates` (`DSANBackbone`,
            `DiSANBackbone`; e.g. `model.backbone` of a trained `NLIClassifier`); other
            backbones raise `AnalysisUnavailable`, one sentence saying what they cannot
            show.
        ids: int sequence [T] of token ids (no padding).

    Returns:
        dict of NumPy arrays:
          `forward_attention`, `backward_attention` [H, T, T]: masked multi-head attention
              weights (rows: queries; masked cells exactly 0; rows sum to 1 over visible keys;
              DiSAN: H = 1, its per-dimension weights averaged over dimensions);
          `forward_gate` [T, D], `backward_gate` [T, D]: fusion-gate values F in (0, 1);
          `forward_inactive_relu`, `backward_inactive_relu` [T]: share of FFN hidden ReLU
              units that are exactly 0 (Figure 10; only a model with an FFN: DSAN);
          `forward_output_max`, `backward_output_max` [T]: max over dimensions of the block
              output (Figure 10);
          `s2t_weights` [T, 2D]: source2token attention (each column sums to 1);
          `max_pool_share` [T]: share of the 2D dimensions in which the word holds the max
              of max pooling (sums to 1).
    """
    info = _intermediates(backbone, "sentence_intermediates")(
        np.asarray(ids, dtype="int32")[None, :])
    numpy = lambda x: np.asarray(ops.convert_to_numpy(x), dtype=np.float32)[0]  # noqa: E731
    result = {}
    for side in ("forward", "backward"):
        block = info[side]
        result[f"{side}_attention"] = numpy(block["attention_weights"])
        result[f"{side}_gate"] = numpy(block["gate"])
        if "ffn_hidden" in block:
            result[f"{side}_inactive_relu"] = np.mean(numpy(block["ffn_hidden"]) == 0.0,
                                                      axis=-1)
        result[f"{side}_output_max"] = numpy(block["output"]).max(axis=-1)
    encoded = numpy(info["encoded"])
    winners = np.argmax(encoded, axis=0)
    result["max_pool_share"] = np.bincount(winners, minlength=encoded.shape[0]) / winners.size
    if "s2t_weights" in info:
        result["s2t_weights"] = numpy(info["s2t_weights"])
    return result


def pair_analysis(backbone, premise_ids, hypothesis_ids):
    """The attention maps of a pair model (the Gaussian Transformer) for one pair.

    Args:
        backbone: a backbone with `pair_intermediates`; others raise
            `AnalysisUnavailable`.
        premise_ids, hypothesis_ids: int sequences [T1], [T2] (no padding).

    Returns:
        list of {"block": name, "kind": "premise_self" | "hypothesis_self" |
        "premise_to_hypothesis" | "hypothesis_to_premise", "weights": float [H, Tq, Tk]}
        in depth order; each row sums to 1 over the keys.
    """
    inputs = {"premise": np.asarray(premise_ids, dtype="int32")[None, :],
              "hypothesis": np.asarray(hypothesis_ids, dtype="int32")[None, :]}
    info = _intermediates(backbone, "pair_intermediates")(inputs, training=False)
    return [dict(entry, weights=np.asarray(ops.convert_to_numpy(entry["weights"]),
                                           dtype=np.float32)[0])
            for entry in info["attention"]]


def attention_by_distance(backbone, batches, max_distance=10):
    """Where DSAN's attention goes over many sentences: the weight it puts at each
    query-key distance |i − j|, against two baselines over the same visible keys: uniform
    weights (no content, no prior) and the distance prior alone (softmax of its bias,
    eq. (7) with QKᵀ = 0). The paper shows the distance mask's effect on one sentence
    (Figure 8); this counts it over a corpus.

    Args:
        backbone: a `DSANBackbone`; others raise `AnalysisUnavailable`.
        batches: iterable of int arrays [B, T] of token ids, 0 padding.
        max_distance: distances above it are pooled into the last bin.

    Returns:
        {"forward": ..., "backward": ...}, each a dict averaged over the queries that see at
        least one key, and over heads:
          `mass` (list, max_distance): attention weight at distance 1, 2, … (last bin: and
              more); `uniform_mass`, `prior_mass`: the same for the baselines;
          `mean_distance`, `uniform_mean_distance`, `prior_mean_distance`: Σ_j a_ij |i − j|;
          `entropy`, `uniform_entropy`, `prior_entropy`: −Σ_j a_ij log a_ij (nats), how
              selective the attention is whatever the distance (uniform: log of the keys);
          `queries`: how many queries were counted (per head).
    """
    kinds = ("", "uniform_", "prior_")
    sums = {side: {**{f"{kind}{value}": 0.0 for value in ("mass", "mean_distance", "entropy")
                      for kind in kinds}, "queries": 0}
            for side in masks.DIRECTIONS}
    for ids in batches:
        ids = np.asarray(ids, dtype="int32")
        info = _intermediates(backbone, "sentence_intermediates")(ids)
        length = ids.shape[1]
        real = ids != masks.PAD_ID                                            # [B, T]
        distance = np.asarray(ops.convert_to_numpy(masks.distances(length)))  # [T, T]
        bins = np.minimum(distance, max_distance) - 1                         # -1: diagonal
        priors = backbone.prior_bias(length)
        for side, total in sums.items():
            visible = _visible_keys(backbone, side, length, real)             # [B, T, T]
            weights = np.asarray(ops.convert_to_numpy(info[side]["attention_weights"]),
                                 dtype=np.float64)                            # [B, H, T, T]
            uniform = visible / np.maximum(visible.sum(-1, keepdims=True), 1)
            prior = _prior_alone(priors[side], visible)
            _add_by_distance(total, zip(kinds, (weights, uniform, prior)), visible.any(-1),
                             distance, bins, max_distance)
    return {side: {key: (value if key == "queries"
                         else (np.asarray(value) / max(total["queries"], 1)).tolist())
                   for key, value in total.items()}
            for side, total in sums.items()}


def _visible_keys(backbone, side, length, real):
    """bool [B, T, T]: the keys query i of the `side` block may see (direction or only the
    diagonal masked, padding masked)."""
    grid = backbone.visible_keys(side, length)
    return (np.asarray(ops.convert_to_numpy(grid))[None]
            & real[:, None, :] & real[:, :, None])


def _prior_alone(bias, visible):
    """float64 [B, T, T]: the attention the distance prior alone gives (softmax of its bias
    [T, T] over the visible keys; rows without a key: 0)."""
    prior = np.where(visible, np.asarray(ops.convert_to_numpy(bias), dtype=np.float64)[None],
                     -np.inf)
    top = np.max(prior, axis=-1, keepdims=True)
    prior = np.exp(prior - np.where(np.isfinite(top), top, 0.0))
    return prior / np.maximum(prior.sum(axis=-1, keepdims=True), 1e-300)


def _add_by_distance(total, named_weights, counted, distance, bins, max_distance):
    """Adds each (name, weights) to `total`: the mass per distance bin, the mean distance and
    the entropy, over the `counted` queries [B, T]. The model's weights are [B, H, T, T]
    (heads averaged for mass and distance, the heads' entropies averaged); the baselines'
    [B, T, T]."""
    total["queries"] += int(counted.sum())
    for name, weights in named_weights:
        per_head = weights if weights.ndim == 4 else weights[:, None]
        mass = np.where(counted[:, :, None], per_head.mean(axis=1), 0.0)   # [B, T, T]
        total[f"{name}mass"] = total[f"{name}mass"] + np.array(
            [mass[..., bins == b].sum() for b in range(max_distance)])
        total[f"{name}mean_distance"] += float((mass * distance).sum())
        if name:
            per_head = mass[:, None]
        per_head = np.where(counted[:, None, :, None], per_head, 0.0)
        logs = np.log(np.where(per_head > 0, per_head, 1.0))
        total[f"{name}entropy"] += float(-(per_head * logs).sum() / per_head.shape[1])
