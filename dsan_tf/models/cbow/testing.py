"""CBOW's part of the shared tests, which find it by the family's name (tests/families.py); not
in the wheel (setup.py): its layer's case for tests/test_layers.py's battery."""

# The smallest model that still shows the family's behaviour, beside the vocabulary and
# embedding width a test picks: what the shared tests build of it.
SMALL = {}


def layer_cases(x, mask, heads):
    """{case: (layer class, constructor arguments, positional inputs, keyword inputs, output
    shape, float32 output whatever the policy)} on features `x` [B, T, D] with `mask`
    [B, T] (`heads`: unused)."""
    from dsan_tf.models.cbow.bag_of_words import BagOfWordsEncoder

    (b, _, d) = x.shape
    return {"bag_of_words": (BagOfWordsEncoder, {}, (x,), {"padding_mask": mask}, (b, d),
                             False)}
