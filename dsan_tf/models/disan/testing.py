"""DiSAN's part of the shared tests, which find it by the family's name (tests/families.py);
not in the wheel (setup.py): its layers' cases for tests/test_layers.py's battery."""

# The smallest model that still shows the family's behaviour, beside the vocabulary and
# embedding width a test picks: what the shared tests build of it.
SMALL = {}


def layer_cases(x, mask, heads):
    """{case: (layer class, constructor arguments, positional inputs, keyword inputs, output
    shape, float32 output whatever the policy)} on features `x` [B, T, D] with `mask`
    [B, T] (`heads`: unused, DiSAN's attention is multi-dimensional)."""
    from dsan_tf.models.disan.layers import (DiSABlock, DiSANEncoder,
                                             MultiDimensionalTokenAttention)

    (b, t, d), masked = x.shape, {"padding_mask": mask}
    return {
        "token2token": (MultiDimensionalTokenAttention, dict(direction="backward", scale=3.0),
                        (x,), masked, (b, t, d), False),
        "disa_block": (DiSABlock, dict(direction="backward", dropout=0.2), (x,), masked,
                       (b, t, d), False),
        "disan_encoder": (DiSANEncoder, dict(dropout=0.2), (x,), masked, (b, 2 * d), False),
    }
