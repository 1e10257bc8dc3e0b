"""DSAN's part of the shared tests, which find it by the family's name (tests/families.py); not
in the wheel (setup.py): its layers' cases for tests/test_layers.py's battery, SAN4NLI's
departures included (tests/test_san4nli.py checks what they compute)."""

# The smallest model that still shows the family's behaviour, beside the vocabulary and
# embedding width a test picks: what the shared tests build of it.
SMALL = {"num_heads": 2, "ffn_dim": 16}


def layer_cases(x, mask, heads):
    """{case: (layer class, constructor arguments, positional inputs, keyword inputs, output
    shape, float32 output whatever the policy)} on features `x` [B, T, D] with `mask`
    [B, T] and `heads` dividing D."""
    from dsan_tf.models.dsan.attention import MaskedMultiHeadAttention
    from dsan_tf.models.dsan.block import DSANBlock
    from dsan_tf.models.dsan.backbone import DSANEncoder

    (b, t, d), masked = x.shape, {"padding_mask": mask}
    return {
        "attention": (MaskedMultiHeadAttention,
                      dict(num_heads=heads, direction="backward", distance_alpha=0.7,
                           dropout=0.2, qkv_norm="full"), (x,), masked, (b, t, d), False),
        "dsan_block": (DSANBlock, dict(direction="backward", num_heads=heads, ffn_dim=2 * d,
                                       distance_prior="gaussian", fusion="raw"),
                       (x,), masked, (b, t, d), False),
        "dsan_encoder": (DSANEncoder, dict(num_heads=heads, ffn_dim=32, pooling="multi_dim",
                                           qkv_norm="full"), (x,), masked, (b, 2 * d), False),
        "attention_san4nli": (MaskedMultiHeadAttention,
                              dict(num_heads=heads, direction="forward", qkv_norm="shared",
                                   attention_scale="d_e",
                                   initialization="san4nli", dropout=0.2), (x,), masked,
                              (b, t, d), False),
        "dsan_block_san4nli": (DSANBlock, dict(direction="forward", num_heads=heads,
                                               ffn_dim=2 * d, attention_scale="d_e",
                                               qkv_norm="shared", fusion_norm="shared",
                                               fusion_output_norm=True, ffn_dropout=True,
                                               initialization="san4nli"),
                               (x,), masked, (b, t, d), False),
        "dsan_encoder_san4nli": (DSANEncoder, dict(num_heads=heads, ffn_dim=32,
                                                   s2t_norm="shared", max_pool_padding="zeros",
                                                   initialization="san4nli"),
                                 (x,), masked, (b, 4 * d), False),
    }
