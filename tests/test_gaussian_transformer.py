"""The Gaussian Transformer (Guo, Zhang & Liu 2019) as the paper describes it, with the
properties DSAN is held to: padding, priors in range, masking, saving, serving, figures."""

import dataclasses
import json
import subprocess
import sys

import keras
import numpy as np
import pytest

from helpers import ENV, cli, inference, ok, random_ids, reloaded_outputs

from dsan_tf import build_model, model_config
from dsan_tf.evaluation.analysis import pair_analysis
from dsan_tf.models.gaussian_transformer.char_ngrams import char_ngram_vectors, ngrams

TINY = model_config("gaussian_transformer", vocab_size=40, embedding_dim=12,
                            char_dim=4, model_dim=16, num_encoder_blocks=1,
                            num_interaction_blocks=2)
DEMO = ["--config=demo", "--model=gaussian_transformer",
        "--model_dim=16", "--char_dim=8", "--num_encoder_blocks=1",
        "--num_interaction_blocks=1", "--optimizer=adamw", "--normalized_weight_decay=0.05",
        "--restart_epochs=2", "--min_learning_rate=1e-4"]


def pairs(rng, batch=4, premise=7, hypothesis=5):
    inputs = {"premise": random_ids(rng, batch, premise, TINY.vocab_size),
              "hypothesis": random_ids(rng, batch, hypothesis, TINY.vocab_size)}
    inputs["premise"][1, 1:] = 0  # a one-token premise
    inputs["hypothesis"][2, 2:] = 0
    return inputs


def test_paper_configuration_has_the_papers_parameter_count():
    """Table 2: 665k parameters at M = 3, N = 2, H = 4, d_model = 120, d_w = 300, d_c = 30,
    the FFN d_model wide (eq. (11)); the frozen embeddings are not counted. The paper's
    configuration is the preset's."""
    import dataclasses

    from dsan_tf.core.config import ExperimentConfig

    paper = ExperimentConfig.named("gaussian_transformer_snli").model_config
    model = build_model("gaussian_transformer", dataclasses.replace(paper, vocab_size=5))
    parts = model.parameter_breakdown()
    assert abs(parts["params_excluding_embeddings"] - 665_000) <= 0.03 * 665_000
    assert parts["embedding_block"] == (300 + 30) * 120  # W_e only, no bias (eq. (9))
    assert parts["classifier"] == 2 * 120 * 120 + 120 + 120 * 3 + 3  # eq. (16)-(17)
    assert [name for name in parts if name.startswith("encoding_block")] == [
        f"encoding_block_{i}" for i in range(3)]
    assert not model.backbone.token_embedding.trainable


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_half_precision_trains_finite_and_padding_never_changes_bfloat16_logits(rng, policy):
    """Training steps stay finite in half precision. Padding under float32 and float16 is
    every family's test (tests/test_model.py); bfloat16's is here."""
    keras.config.set_dtype_policy(policy)
    # One interaction block: the training step's compile is most of the test's time.
    model = build_model("gaussian_transformer",
                        dataclasses.replace(TINY, num_interaction_blocks=1))
    inputs = pairs(rng)
    if policy == "mixed_bfloat16":
        base = inference(model, inputs).astype("float32")
        padded = {side: np.pad(ids, ((0, 0), (0, 4))) for side, ids in inputs.items()}
        np.testing.assert_allclose(inference(model, padded).astype("float32"), base,
                                   atol=5e-2)
        alone = {"premise": inputs["premise"][1:2, :1], "hypothesis": inputs["hypothesis"][1:2]}
        np.testing.assert_allclose(inference(model, alone).astype("float32")[0],
                                   base[1], atol=5e-2)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    history = model.fit(inputs, np.array([0, 1, 2, 0]), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert np.isfinite(inference(model, inputs).astype("float32")).all()


def test_attention_never_reaches_padding(rng):
    """Inter-attention weights on padded keys are exactly 0 and every real query's row sums
    to 1; self-attention may attend to the token itself (eq. (4) lowers that weight, it
    does not remove it, unlike DSAN)."""
    model = build_model("gaussian_transformer", TINY)
    inputs = pairs(rng)
    info = model.backbone.pair_intermediates(inputs)
    real = {side: inputs[side] != 0 for side in ("premise", "hypothesis")}
    kinds = set()
    for entry in info["attention"]:
        weights = np.asarray(entry["weights"])
        query, _, key = entry["kind"].partition("_to_")
        query = query.replace("_self", "")
        key = key or query
        kinds.add(entry["kind"])
        assert np.all(weights * ~real[key][:, None, None, :] == 0), entry
        sums = weights.sum(-1)
        np.testing.assert_allclose(sums[np.broadcast_to(real[query][:, None, :], sums.shape)],
                                   1.0, atol=1e-5)
        if key == query:
            diagonal = np.diagonal(weights, axis1=-2, axis2=-1)
            assert np.all(diagonal[np.broadcast_to(real[query][:, None, :], diagonal.shape)] > 0)
    assert kinds == {"premise_self", "hypothesis_self", "premise_to_hypothesis",
                     "hypothesis_to_premise"}
    assert len(info["attention"]) == 2 * TINY.num_encoder_blocks + 4 * TINY.num_interaction_blocks


def test_prior_keeps_w_positive_and_b_nonpositive_while_training(rng):
    """Eq. (4): w > 0, b ≤ 0 for every self-attention layer, after training and after a
    step that pushes every w below 0 and every b above 0."""
    model = build_model("gaussian_transformer", TINY)
    priors = [layer for layer in model._flatten_layers() if layer.name == "distance_prior"
              and getattr(layer, "prior", None) == "gaussian_variant"]
    assert len(priors) == TINY.num_encoder_blocks + TINY.num_interaction_blocks
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(True))
    inputs = pairs(rng, batch=16, premise=9, hypothesis=9)
    model.fit(inputs, rng.integers(0, 3, 16), epochs=2, verbose=0)
    assert any(float(p.weight.numpy()) != 1.0 or float(p.bias.numpy()) != 0.0 for p in priors)
    for prior in priors:
        assert float(prior.weight.numpy()) > 0 and float(prior.bias.numpy()) <= 0
    # The optimizer applies the constraints after each step (Keras: variable.constraint).
    variables = [v for p in priors for v in (p.weight, p.bias)]
    push = [keras.ops.convert_to_tensor(10.0 if v is p.weight else -10.0)
            for p in priors for v in (p.weight, p.bias)]
    keras.optimizers.SGD(1.0).apply(push, variables)
    for prior in priors:
        assert 0 < float(prior.weight.numpy()) <= 1e-3 and float(prior.bias.numpy()) == 0.0


def test_char_ngram_vectors_are_fixed_and_max_pooled():
    """Eq. (6): a word's vector is the maximum over its 5-grams' fixed vectors, the same in
    every vocabulary; padding and the unknown word get zeros."""
    assert ngrams("house") == ["<hous", "house", "ouse>"] and ngrams("a") == ["<a>"]
    table = char_ngram_vectors(["house", "houses", "mouse"], dim=6)
    again = char_ngram_vectors(["mouse", "house"], dim=6)
    np.testing.assert_array_equal(table[2], again[3])
    assert not table[:2].any()
    # "houses" shares "<hous" and "house" with "house": its max is at least as large there.
    assert np.all(table[3] >= np.minimum(table[2], table[3]))
    assert not np.array_equal(table[2], table[4])


def test_keras_file_reloads_in_a_fresh_process(rng, tmp_path):
    model = build_model("gaussian_transformer", TINY)
    inputs = pairs(rng)
    for prior in [layer for layer in model._flatten_layers()
                  if getattr(layer, "prior", None) == "gaussian_variant"]:
        prior.weight.assign(0.3)  # not the initial values: they must come from the file
        prior.bias.assign(-0.2)
    expected = inference(model, inputs)
    np.testing.assert_allclose(reloaded_outputs(model, inputs, tmp_path), expected,
                               atol=1e-6)
    assert dataclasses.asdict(TINY)["model_dim"] == model.backbone.model_dim


FRESH = """
import json, sys
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](premise=tf.constant(["the dog chased the cat"]),
                                          hypothesis=tf.constant(["the cat chased the dog"]))
print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                  "signatures": sorted(model.signatures)}))
"""


@pytest.mark.tensorflow
@pytest.mark.slow
def test_trains_exports_serves_raw_strings_and_draws_its_attention(tmp_path):
    """End to end through the project's programs: AdamWR training, a SavedModel that takes
    raw strings and loads without the package, and the self-/inter-attention figures."""
    workdir = tmp_path / "run"
    ok(cli("train", *DEMO, "--epochs=2", f"--workdir={workdir}",
           f"--export_dir={workdir / 'export'}"))
    fresh = json.loads(ok(subprocess.run([sys.executable, "-c", FRESH,
                                          str(workdir / "export" / "1")],
                                         env=ENV, capture_output=True, text=True, timeout=300))
                       .strip().splitlines()[-1])
    assert sum(fresh["probabilities"][0]) == pytest.approx(1.0, abs=1e-4)
    assert fresh["signatures"] == ["serve_pairs", "serving_default"]  # a pair model encodes no sentence alone
    import dsan_tf

    loaded = dsan_tf.load(str(workdir))
    assert loaded.classify(["the dog ran"], ["a dog"])["probabilities"].shape == (1, 3)
    with pytest.raises(ValueError, match="is a pair model"):
        loaded.encode(["the dog ran"])
    figures = tmp_path / "figures"
    ok(cli("visualize", f"--workdir={workdir}", "--sentence=the dog chased the cat",
           "--hypothesis=the cat ran", f"--output_dir={figures}"))
    for name in ("self_attention.png", "inter_attention.png"):
        assert (figures / name).read_bytes().startswith(b"\x89PNG")


def test_pair_analysis_gives_every_map(rng):
    model = build_model("gaussian_transformer", TINY)
    maps = pair_analysis(model.backbone, [3, 4, 5], [6, 7])
    shapes = {entry["kind"]: entry["weights"].shape for entry in maps}
    assert shapes["premise_to_hypothesis"] == (TINY.num_heads, 3, 2)
    assert shapes["hypothesis_self"] == (TINY.num_heads, 2, 2)


@pytest.mark.parametrize("prior", ["linear", "learned"])
def test_a_prior_with_a_parameter_it_does_not_declare_is_refused(prior):
    """The linear prior's α and the learned prior's longest distance are DSAN's
    hyperparameters; this family declares neither, so it offers neither prior rather than
    building one with values no flag set (the layer keeps no default of its own)."""
    with pytest.raises(ValueError, match=f"distance_prior must be one of .*, got '{prior}'"):
        model_config("gaussian_transformer", distance_prior=prior)
