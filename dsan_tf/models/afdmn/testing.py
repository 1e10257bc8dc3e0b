"""AF-DMN's part of the shared tests, which find it by the family's name (tests/families.py);
not in the wheel (setup.py): its layers' cases for tests/test_layers.py's battery."""

# The smallest model that still shows the family's behaviour, beside the vocabulary and
# embedding width a test picks: what the shared tests build of it.
SMALL = {"lstm_units": 8, "matching_blocks": 1,
         # ESIM's start gives logits of ~1e-12, which no comparison can read.
         "initialization": "glorot"}


def layer_cases(x, mask, heads):
    """{case: (layer class, constructor arguments, positional inputs, keyword inputs, output
    shape, float32 output whatever the policy)} on features `x` [B, T, D] with `mask`
    [B, T] (`heads`: unused)."""
    from dsan_tf.models.afdmn.layers import AttentionFusion, ComputationalBlock, CrossAttention

    (b, t, d), masked = x.shape, {"padding_mask": mask}
    return {
        "cross_attention": (CrossAttention, {}, (x, x[:, ::-1]),
                            dict(premise_mask=mask, hypothesis_mask=mask[::-1]),
                            (b, 2, t, d), False),
        "attention_fusion": (AttentionFusion, dict(units=6, dropout=0.2), (x, x[:, ::-1]),
                             masked, (b, t, 12), False),
        "computational_block": (ComputationalBlock, dict(units=d // 2, dropout=0.2),
                                (x, x[:, ::-1]), dict(premise_mask=mask, hypothesis_mask=mask),
                                (b, 2, t, d), False),
    }
