"""`dsan-summary` reports the paper's parameter count."""

from helpers import ROOT, cli


def summary(*flags):
    return cli("summary", *flags)


def count(result):
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    name, value = last.split("=")
    assert name == "params_excluding_embeddings"
    return int(value)


def test_paper_configuration_is_4_7_million_and_ablation_is_the_same():
    paper = count(summary())
    assert 4_650_000 <= paper <= 4_750_000
    page = (ROOT / "docs" / "PERFORMANCE.md").read_text()
    assert f"params_excluding_embeddings={paper}" in page, "the quoted parameter count is stale"
    assert count(summary("--config=dsan_no_distance_snli")) == paper
    assert count(summary("--distance_prior=none")) == paper


def test_every_model_and_prior_is_counted():
    assert 2_300_000 < count(summary("--model=disan")) < 2_400_000
    assert count(summary("--model=cbow")) < 400_000
    assert count(summary("--distance_prior=learned", "--prior_max_distance=4")) \
        == count(summary()) + 2 * 5


def test_model_flags_reach_the_model():
    assert count(summary("--embedding_dim=32", "--num_heads=4", "--ffn_dim=64")) < 200_000


def test_bad_flag_is_one_clear_line():
    result = summary("--embedding_dim=301")
    assert result.returncode != 0
    assert "--embedding_dim=301 must be divisible by --num_heads=5" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_named_config_counts_its_own_family():
    """`--config` (then `--preset`) of another family counts that family's model (it
    built --model's default, DSAN, and crashed), and the count is its flagfiles' (the
    study's configuration, then the family's on top)."""
    result = summary("--config=afdmn_snli25k_glove50")
    assert result.stdout.startswith("model: afdmn, ") and "'embedding_dim': 50" in result.stdout
    from dsan_tf.models import registry

    named = registry.named_configs()
    assert count(result) == count(summary(
        f"--flagfile={named['snli25k_glove50'].path}",
        f"--flagfile={named['afdmn_snli25k_glove50'].path}"))
    gaussian = summary("--config=gaussian_transformer_snli25k_glove50")
    assert gaussian.stdout.startswith("model: gaussian_transformer, ") and count(gaussian) > 0
