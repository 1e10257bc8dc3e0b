"""What the model computes for one sentence, read from its own intermediate outputs
(the paper's Section 5.5, Figures 7-13). Nothing is recomputed outside the model.

Shape legend: T tokens, H heads, D word width (d_e), F FFN hidden width.
"""

import numpy as np
from keras import ops


def sentence_analysis(backbone, ids):
    """Intermediate values of the DSAN sentence encoder for one sentence.

    Args:
        backbone: a `DSANBackbone` (e.g. `model.backbone` of a trained `NLIClassifier`);
            other backbones raise `dsan_tf.models.AnalysisUnavailable`, one sentence
            saying what they cannot show.
        ids: int sequence [T] of token ids (no padding).

    Returns:
        dict of NumPy arrays:
          `forward_attention`, `backward_attention` [H, T, T]: masked multi-head attention
              weights (rows: queries; masked cells exactly 0; rows sum to 1 over visible keys);
          `forward_gate` [T, D], `backward_gate` [T, D]: fusion-gate values F in (0, 1);
          `forward_inactive_relu`, `backward_inactive_relu` [T]: share of FFN hidden ReLU
              units that are exactly 0 (Figure 10);
          `forward_output_max`, `backward_output_max` [T]: max over dimensions of the block
              output (Figure 10);
          `s2t_weights` [T, 2D]: source2token attention (each column sums to 1);
          `max_pool_share` [T]: share of the 2D dimensions in which the word holds the max
              of max pooling (sums to 1).
    """
    info = backbone.sentence_intermediates(np.asarray(ids, dtype="int32")[None, :])
    numpy = lambda x: np.asarray(ops.convert_to_numpy(x), dtype=np.float32)[0]  # noqa: E731
    result = {}
    for side in ("forward", "backward"):
        block = info[side]
        hidden = numpy(block["ffn_hidden"])
        result[f"{side}_attention"] = numpy(block["attention_weights"])
        result[f"{side}_gate"] = numpy(block["gate"])
        result[f"{side}_inactive_relu"] = np.mean(hidden == 0.0, axis=-1)
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
            `dsan_tf.models.AnalysisUnavailable`.
        premise_ids, hypothesis_ids: int sequences [T1], [T2] (no padding).

    Returns:
        list of {"block": name, "kind": "premise_self" | "hypothesis_self" |
        "premise_to_hypothesis" | "hypothesis_to_premise", "weights": float [H, Tq, Tk]}
        in depth order; each row sums to 1 over the keys.
    """
    inputs = {"premise": np.asarray(premise_ids, dtype="int32")[None, :],
              "hypothesis": np.asarray(hypothesis_ids, dtype="int32")[None, :]}
    info = backbone.pair_intermediates(inputs, training=False)
    return [dict(entry, weights=np.asarray(ops.convert_to_numpy(entry["weights"]),
                                           dtype=np.float32)[0])
            for entry in info["attention"]]
