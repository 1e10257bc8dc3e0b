"""The analysis figures' numbers are the model's own, and they have the paper's properties."""

import itertools

import numpy as np
import pytest

from dsan_tf import DSANConfig, build_model, model_config
from dsan_tf.evaluation import plots
from dsan_tf.evaluation.analysis import attention_by_distance, sentence_analysis
from dsan_tf.evaluation.analysis import AnalysisUnavailable
from dsan_tf.layers import masks


@pytest.fixture(scope="module")
def result():
    model = build_model("dsan", DSANConfig(vocab_size=30, embedding_dim=16, num_heads=4,
                                           ffn_dim=32, classifier_units=8))
    return sentence_analysis(model.backbone, [5, 9, 3, 7, 12, 4])


def test_attention_rows_and_masked_cells(result):
    for side, visible in (("forward", np.tril(np.ones((6, 6)), -1)),
                          ("backward", np.triu(np.ones((6, 6)), 1))):
        weights = result[f"{side}_attention"]
        assert weights.shape == (4, 6, 6)
        assert np.all(weights[:, visible == 0] == 0.0)
        rows = weights.sum(-1)
        has_key = visible.sum(-1) > 0
        np.testing.assert_allclose(rows[:, has_key], 1.0, rtol=1e-5)
        assert np.all(rows[:, ~has_key] == 0.0)


def test_gate_relu_and_pooling_shares(result):
    for side in ("forward", "backward"):
        gate = result[f"{side}_gate"]
        assert gate.shape == (6, 16) and np.all((gate > 0) & (gate < 1))
        assert np.all((result[f"{side}_inactive_relu"] >= 0) & (result[f"{side}_inactive_relu"] <= 1))
        assert result[f"{side}_output_max"].shape == (6,)
    assert result["max_pool_share"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(result["s2t_weights"].sum(axis=0), 1.0, rtol=1e-5)


def test_figures_render(result, tmp_path):
    tokens = ["A", "lady", "stands", "outside", "a", "market"]
    for stem, figure in plots.sentence_figures(tokens, result).items():
        data = plots.png_bytes(figure)
        assert data.startswith(b"\x89PNG") and len(data) > 1000, stem
    figure = plots.accuracy_by_length({"run": [{"min_length": 5, "max_length": 10,
                                                "accuracy": 0.8, "examples": 3}]})
    assert plots.png_bytes(figure).startswith(b"\x89PNG")


def test_cbow_says_in_one_sentence_that_it_has_nothing_to_draw():
    model = build_model("cbow", model_config("cbow", vocab_size=10, embedding_dim=8))
    with pytest.raises(AnalysisUnavailable, match="Figures 7-11") as raised:
        sentence_analysis(model.backbone, [2, 3])
    assert "no attention, fusion gate or pooling weights" in str(raised.value)
    assert len(str(raised.value).rstrip(".").split(". ")) == 1  # one sentence


def test_disan_shows_its_attention_gate_and_pooling(tmp_path):
    """DiSAN's figures. Its one map per direction is the mean over
    dimensions of its per-dimension weights (read from the layer, each row a distribution
    over the keys its direction sees); its gate and source2token weights; no Figure 10
    (DiSAN has no FFN)."""
    model = build_model("disan", model_config("disan", vocab_size=10, embedding_dim=8))
    ids = [2, 5, 3, 7, 4]
    result = sentence_analysis(model.backbone, ids)
    info = model.backbone.sentence_intermediates(np.array([ids], "int32"))
    for side in ("forward", "backward"):
        per_dimension = np.asarray(info[side]["dimension_weights"])[0]  # [T, T, D]
        np.testing.assert_allclose(result[f"{side}_attention"][0], per_dimension.mean(-1),
                                   atol=1e-6)
        visible = np.asarray(masks.directional_mask(5, side))
        rows = result[f"{side}_attention"][0].sum(-1)
        np.testing.assert_allclose(rows[visible.any(-1)], 1.0, rtol=1e-5)
        assert np.all(result[f"{side}_attention"][0][~visible] == 0.0)
        assert result[f"{side}_gate"].shape == (5, 8)
        assert f"{side}_inactive_relu" not in result
    np.testing.assert_allclose(result["s2t_weights"].sum(axis=0), 1.0, rtol=1e-5)
    vector = model.backbone(np.array([ids], "int32"))
    encoded = np.asarray(info["encoded"])[0]
    np.testing.assert_allclose(np.asarray(vector)[0], (result["s2t_weights"] * encoded).sum(0),
                               atol=1e-5)  # the pooling the figure shows is the model's
    figures = plots.sentence_figures(["a", "b", "c", "d", "e"], result)
    assert sorted(figures) == ["fig07_attention", "fig09_fusion_gate", "fig11_pooling"]


def _zero_queries(backbone):
    """QKᵀ = 0 in both blocks: the attention is then the distance prior's softmax alone."""
    for block in (backbone.encoder.forward_block, backbone.encoder.backward_block):
        kernel = block.attention.query_dense.kernel
        kernel.assign(np.zeros(kernel.shape, kernel.dtype))


@pytest.mark.parametrize("prior", ["linear", "none"])
def test_attention_by_distance_against_uniform_and_prior_alone(prior):
    """Counted over visible keys only (direction, diagonal, padding): a 3-token and a
    4-token sentence give 5 queries a side, which see 1, 2, 1, 2 and 3 keys: uniform weight
    by distance (1 + ½ + 1 + ½ + ⅓, ½ + ½ + ⅓, ⅓) / 5, the linear prior's softmax(−1.5·d)
    over the same keys. Queries of zero make the attention the prior's alone."""
    model = build_model("dsan", DSANConfig(vocab_size=30, embedding_dim=16, num_heads=4,
                                           ffn_dim=32, classifier_units=8,
                                           distance_prior=prior))
    ids = np.array([[5, 9, 3, 0], [5, 9, 3, 7]], "int32")
    _zero_queries(model.backbone)
    result = attention_by_distance(model.backbone, [ids[:1, :3], ids], max_distance=4)
    for side in ("forward", "backward"):
        summary = result[side]
        assert summary["queries"] == 2 + 5
        assert sum(summary["mass"]) == pytest.approx(1.0)
        np.testing.assert_allclose(summary["mass"], summary["prior_mass"], atol=1e-5)
        assert summary["entropy"] == pytest.approx(summary["prior_entropy"], abs=1e-5)

    def expected(alpha):  # softmax(-α·d) over the 1, 2 or 3 keys a query sees, ids[0] and [1]
        mass = np.zeros(4)
        for keys in (1, 2, 1, 2, 3):
            weights = np.exp(-alpha * np.arange(1, keys + 1))
            mass[:keys] += weights / weights.sum()
        return mass / 5

    single = attention_by_distance(model.backbone, [ids], max_distance=4)["backward"]
    np.testing.assert_allclose(single["uniform_mass"], expected(0.0), atol=1e-12)
    assert single["uniform_mean_distance"] == pytest.approx(1.4)
    assert single["uniform_entropy"] == pytest.approx((2 * np.log(2) + np.log(3)) / 5)
    alpha = 1.5 if prior == "linear" else 0.0
    np.testing.assert_allclose(single["prior_mass"], expected(alpha), atol=1e-7)
    figure = plots.attention_by_distance({"run": result})
    assert plots.png_bytes(figure).startswith(b"\x89PNG")


def test_figure_8_names_each_models_prior_and_its_titles_do_not_overlap():
    """DiSAN's panels read "(distance prior: ?)", and the lower panels'
    long titles ran into each other."""
    import matplotlib

    matplotlib.use("Agg")
    from dsan_tf.evaluation import figures, plots

    assert figures.prior_label({"model": "disan", "model_config": {}}) == (
        "disan: no distance prior")
    assert figures.prior_label({"model": "dsan", "model_config": {
        "distance_prior": "linear"}}) == "distance prior: linear"
    tokens = "a man is playing a guitar on the street".split()
    rng = np.random.default_rng(0)
    maps = [(rng.random((2, 9, 9)), rng.random((2, 9, 9))) for _ in range(2)]
    figure = plots.compare_attention(tokens, maps, [
        "dsan_seed0 (distance prior: linear)", "disan_seed0 (disan: no distance prior)"])
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [axis.title.get_window_extent(renderer) for axis in figure.axes
             if axis.get_title()]
    assert len(boxes) == 4
    for first, second in itertools.combinations(boxes, 2):
        assert not first.overlaps(second)
