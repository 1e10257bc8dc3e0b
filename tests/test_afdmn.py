"""AF-DMN (Duan et al. 2018) as the paper describes it: initialisation, masking, saving
(padding under float32 and float16 is every family's test, tests/test_model.py)."""

import dataclasses

import keras
import numpy as np
import pytest

from helpers import random_ids

from dsan_tf import build_model, model_config

TINY = model_config("afdmn", vocab_size=40, embedding_dim=12, lstm_units=8,
                            matching_blocks=2)


def pairs(rng):
    inputs = {"premise": random_ids(rng, 4, 7, TINY.vocab_size),
              "hypothesis": random_ids(rng, 4, 5, TINY.vocab_size)}
    inputs["premise"][1, 1:] = 0  # a one-token premise
    inputs["hypothesis"][2, 2:] = 0
    return inputs


def test_paper_configuration():
    """Section 5.2: 300-d everything, k = 3 for SNLI, trainable GloVe, dropout 0.2; the
    prediction MLP of eq. (8) reads [mean; max] of both sentences, 8h wide."""
    model = build_model("afdmn", model_config("afdmn", vocab_size=5))
    parts = model.parameter_breakdown()
    lstm = 2 * 4 * (300 * 300 + 300 * 300 + 300)  # BiLSTM(300) on 300-d inputs
    assert parts["encoder_bilstm"] == lstm
    block = 600 * 600 + 2 * 600 + 2 * (2400 * 300 + 300 + lstm)  # eq. (9), 2 fusions
    assert [parts[f"block_{i}"] for i in range(3)] == [block] * 3
    assert parts["classifier"] == 2400 * 300 + 300 + 300 * 3 + 3
    assert model.backbone.token_embedding.trainable and model.backbone.dropout == 0.2


def _encoder_and_block_kernels(initialization):
    model = build_model("afdmn", dataclasses.replace(TINY, initialization=initialization))
    model({"premise": np.ones((1, 3), "int32"), "hypothesis": np.ones((1, 2), "int32")})
    backbone = model.backbone
    kernels = {w.path: w.numpy() for layer in [backbone.encoder, *backbone.blocks]
               for w in layer.weights if "bias" not in w.path}
    # BiLSTM: kernel and recurrent kernel per direction; a block: eq. (9)'s W, U_l, U_r and
    # two fusions of one MLP kernel and a BiLSTM each.
    assert len(kernels) == 4 + 2 * (3 + 2 * (1 + 4))
    return kernels


def test_literal_initialization_is_uniform_within_a_hundredth():
    """Section 5.2 read literally: U(−0.01, 0.01) for every network weight."""
    kernels = _encoder_and_block_kernels("uniform")
    assert max(np.abs(w).max() for w in kernels.values()) <= 0.01
    glorot = _encoder_and_block_kernels("glorot")
    assert max(np.abs(w).max() for w in glorot.values()) > 0.1


def test_esim_initialization_as_its_reference_code():
    """ESIM's `param_init_lstm` / `param_init_fflayer` (AF-DMN's pointer): every LSTM gate's
    h×h block orthogonal (recurrent kernels; input kernels when square), other blocks and
    the MLPs N(0, 0.01²); the two directions start differently."""
    kernels = _encoder_and_block_kernels("esim")
    h = TINY.lstm_units
    recurrent = [w for path, w in kernels.items() if path.endswith("recurrent_kernel")]
    square_inputs = [w for path, w in kernels.items() if path.endswith("lstm_cell/kernel")
                     and w.shape[0] == h]
    gaussian = [w for path, w in kernels.items() if path.endswith("fusion_mlp/kernel")
                or (path.endswith("lstm_cell/kernel") and w.shape[0] != h)]
    assert len(recurrent) == 2 * (1 + 2 * TINY.matching_blocks) and square_inputs and gaussian
    for w in recurrent + square_inputs:
        for gate in range(4):
            block = w[:, gate * h:(gate + 1) * h]
            np.testing.assert_allclose(block.T @ block, np.eye(h), atol=1e-5)
    values = np.concatenate([w.ravel() for w in gaussian])
    assert 0.008 < values.std() < 0.012 and abs(values.mean()) < 0.002
    forward, backward = (w for path, w in kernels.items()
                         if "encoder_bilstm" in path and path.endswith("recurrent_kernel"))
    assert not np.allclose(forward, backward)


@pytest.mark.tensorflow
def test_deep_kernels_get_a_gradient_adam_can_follow():
    """The study's size (d_e 50, h 100, k 3), at initialisation: with ESIM's and Keras'
    starting weights the deepest block's kernel gradients are within 8 orders of the
    head's bias gradients (the error the loss hands back, whatever the weights) and Adam's
    first step moves them by at least 1/1000 of the learning rate; with the literal
    U(±0.01) they are over 14 orders below and Adam's step is under 1e-9 of the rate, so the
    blocks never learn (docs/FIDELITY.md#afdmn-initialisation-at-study-size,
    records/runs/afdmn_init_scales.json)."""
    from experiments.afdmn_init import measure

    for initialization, learns in (("esim", True), ("glorot", True), ("uniform", False)):
        found = measure(initialization, embedding_dim=50, units=100, batch_size=8)
        gradient = found["gradient"]
        orders = np.log10(gradient["head_biases"] / gradient["deepest_block_kernels"])
        assert (orders < 8) == learns and (orders > 14) != learns, (initialization, found)
        assert (found["adam_step"] > 1e-3) == learns, (initialization, found)
        assert (found["adam_step"] < 1e-9) != learns, (initialization, found)
        # The signal after the last block: literal weights shrink it by 1e5 per block.
        assert (found["signal"][-1] > 1e-9) == learns, (initialization, found)


def test_attention_never_reaches_padding(rng):
    model = build_model("afdmn", TINY)
    inputs = pairs(rng)
    real = {side: inputs[side] != 0 for side in ("premise", "hypothesis")}
    maps = model.backbone.pair_intermediates(inputs)["attention"]
    assert len(maps) == 4 * TINY.matching_blocks
    for entry in maps:
        query, _, key = entry["kind"].partition("_to_")
        query = query.replace("_self", "")
        weights = np.asarray(entry["weights"])
        assert np.all(weights * ~real[key or query][:, None, None, :] == 0), entry["kind"]
        sums = weights.sum(-1)
        np.testing.assert_allclose(
            sums[np.broadcast_to(real[query][:, None, :], sums.shape)], 1.0, atol=1e-5)




def test_a_bilstm_made_while_keras_loads_is_never_an_earlier_layer():
    """Keras' loading shares objects by `id()`, and a freed object's id is reused: inside
    `load_model`, the BiLSTM's forward LSTM (made by serializing the one it is given) now
    and then came back as an earlier backward LSTM, and the file failed to load. Here every
    id counts as seen before, mapped to a backward LSTM: the BiLSTM is still made afresh."""
    from keras.src.saving import serialization_lib

    from dsan_tf.models.afdmn.layers import bilstm

    earlier = keras.layers.LSTM(4, go_backwards=True, name="earlier")

    class SeenBefore(dict):
        def __contains__(self, key):
            return True

        def __getitem__(self, key):
            return {}

        def get(self, key, default=None):
            return earlier

    with serialization_lib.ObjectSharingScope():
        from keras.src.backend.common import global_state

        global_state.set_global_attribute("shared_objects/id_to_config_map", SeenBefore())
        global_state.set_global_attribute("shared_objects/id_to_obj_map", SeenBefore())
        layer = bilstm(4, "fusion_bilstm", "float32", "glorot_uniform")
    assert layer.forward_layer is not earlier and layer.backward_layer is not earlier
    assert (layer.forward_layer.go_backwards, layer.backward_layer.go_backwards) == (False, True)


def test_a_hyperparameter_afdmn_has_no_use_for_is_refused_not_ignored():
    """`--layer_norm_epsilon` (every family's field) would change nothing in AF-DMN, which
    has no LayerNorm: one sentence says so, rather than a config.json recording a value
    the model never used."""
    with pytest.raises(ValueError, match=r"layer_norm_epsilon does not apply to AF-DMN "
                                         r"\(it has no LayerNorm\)"):
        model_config("afdmn", layer_norm_epsilon=1e-3)
    assert model_config("afdmn").layer_norm_epsilon == model_config("dsan").layer_norm_epsilon
