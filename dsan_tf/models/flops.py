"""FLOP counts of parts several families share (a multiply-add is 2), for the benchmark's
roofline (`Family.forward_flops`)."""


def source2token(width, length):
    """Source2token attention's two (2D × 2D) linears over `length` tokens of width D."""
    return 2 * 2 * length * (2 * width) ** 2


def sentence_classifier(config, features):
    """The classifier of DSAN's Section 4.1 on [u; v; |u − v|; u * v] of `features`-wide
    sentence vectors: the ReLU layer and the logits."""
    return 2 * 4 * features * config.classifier_units + 2 * config.classifier_units * 3
