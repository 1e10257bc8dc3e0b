"""The Gaussian Transformer's part of the shared tests, which find it by the family's name
(tests/families.py); not in the wheel (setup.py): its layers' cases for
tests/test_layers.py's battery."""

# The smallest model that still shows the family's behaviour, beside the vocabulary and
# embedding width a test picks: what the shared tests build of it.
SMALL = {"model_dim": 8, "num_heads": 2, "char_dim": 4}


def layer_cases(x, mask, heads):
    """{case: (layer class, constructor arguments, positional inputs, keyword inputs, output
    shape, float32 output whatever the policy)} on features `x` [B, T, D] with `mask`
    [B, T] and `heads` dividing D."""
    from dsan_tf.models.gaussian_transformer.attention import GaussianAttentionSublayer
    from dsan_tf.models.gaussian_transformer.layers import (GaussianEncodingBlock,
                                                            GaussianTransformerEmbedding,
                                                            InteractionBlock,
                                                            SiameseAggregation)

    (b, t, d), masked = x.shape, {"padding_mask": mask}
    return {
        "gaussian_self_attention": (GaussianAttentionSublayer,
                                    dict(num_heads=heads, distance_prior="gaussian",
                                         dropout=0.2), (x,), masked, (b, t, d), False),
        "inter_attention": (GaussianAttentionSublayer,
                            dict(num_heads=heads, distance_prior="none"), (x,),
                            dict(padding_mask=mask, context=x[:, :3], context_mask=mask[:, :3]),
                            (b, t, d), False),
        "gaussian_encoding_block": (GaussianEncodingBlock,
                                    dict(num_heads=heads, ffn_dim=16, distance_prior="gaussian"),
                                    (x,), masked, (b, t, d), False),
        "interaction_block": (InteractionBlock,
                              dict(num_heads=heads, ffn_dim=16, distance_prior="gaussian"),
                              (x, x[:, ::-1]), dict(premise_mask=mask, hypothesis_mask=mask),
                              (b, 2, t, d), False),
        "siamese_aggregation": (SiameseAggregation, dict(model_dim=d), (x, x[:, ::-1]), masked,
                                (b, d), False),
        "gaussian_transformer_embedding": (GaussianTransformerEmbedding,
                                           dict(model_dim=8, dropout=0.2), (x,), {}, (b, t, 8),
                                           False),
    }
