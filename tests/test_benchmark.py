"""`experiments.benchmark` writes the figures users compare machines with (not a timed test)."""

import json

import pytest

from helpers import cli, ok

from dsan_tf import DSANConfig
from experiments.benchmark import forward_flops


def test_flop_count_follows_the_formula():
    config = DSANConfig(embedding_dim=300, num_heads=5, ffn_dim=1200)
    d, f, t = 300, 1200, 16
    block = 12 * t * d * d + 4 * t * t * d + 4 * t * d * f
    sentence = 2 * block + 4 * t * (2 * d) ** 2
    classifier = 2 * 16 * d * 300 + 2 * 300 * 3
    assert forward_flops(config, t, t) == 2 * sentence + classifier
    # Attention makes the cost superlinear in T.
    assert forward_flops(config, 64, 64) > 4 * forward_flops(config, 16, 16)
    # The baselines are counted as themselves, not as DSAN.
    disan_sentence = 2 * (10 * t * d * d + 2 * t * t * d) + 4 * t * (2 * d) ** 2
    disan_classifier = 2 * 8 * d * 300 + 2 * 300 * 3
    assert forward_flops(config, t, t, "disan") == 2 * disan_sentence + disan_classifier
    assert forward_flops(config, t, t, "cbow") == 2 * 4 * d * 300 + 2 * 300 * 3


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_benchmark_writes_every_figure(tmp_path, onednn):
    """On any CPU, oneDNN on or off: where TF's CPU allocator keeps no statistics (oneDNN
    off, e.g. AMD CPUs without AVX-512), memory comes from the process, and says so."""
    output = tmp_path / "benchmark.json"
    ok(cli("benchmark", "--embedding_dim=16", "--num_heads=4", "--ffn_dim=32",
           "--batch_size=8", "--benchmark_lengths=8", "--sweep_lengths=4,8", "--train_steps=2",
           "--benchmark_seconds=0.1",
           "--train_data=synthetic:word_order/dev", f"--output={output}",
           env={"TF_ENABLE_ONEDNN_OPTS": onednn}))
    result = json.loads(output.read_text())
    assert result["matmul_peak_gflops"] > 0
    assert result["provenance"]["keras"] and result["machine"]["cpus"] > 0
    assert result["machine"]["tf_enable_onednn_opts"] == onednn
    assert set(result["lengths"]) == {"4", "8"}
    for figures in result["lengths"].values():
        for key in ("train_pairs_per_sec", "infer_pairs_per_sec", "roofline_fraction",
                    "peak_memory_bytes"):
            assert figures[key] > 0, key
        source = figures["peak_memory_source"]
        assert source in ("tf_allocator:CPU:0", "tf_allocator:GPU:0", "process_peak_rss",
                          "process_peak_rss_since_start")
        if source.startswith("process"):
            assert figures["peak_memory_bytes"] == figures["peak_rss_bytes"]
    assert set(result["lengths"]["8"]["by_jit_compile"]) == {"false", "true"}
    assert result["snli_epoch"]["projected_seconds"] > 0
    bad = cli("benchmark", "--sweep_lengths=8,x")
    assert bad.returncode != 0 and "--sweep_lengths must be positive integers" in bad.stderr


@pytest.mark.slow
def test_pipeline_benchmark_honours_the_model_flags(tmp_path):
    """It builds its model through the task, so --model and --learning_rate apply."""
    output = tmp_path / "pipeline.json"
    ok(cli("pipeline_benchmark", "--train_data=synthetic:word_order/dev", "--model=disan",
           "--embedding_dim=16", "--num_heads=4", "--learning_rate=0.01", "--batch_size=16",
           "--pipeline_epochs=1", "--train_steps=2", f"--output={output}"))
    result = json.loads(output.read_text())
    assert result["model"] == "disan" and result["batching"] == "sorted_chunks"
    assert result["pipeline_pairs_per_sec"] > 0 and result["train_pairs_per_sec"] > 0
    assert result["padding_fraction"] == result["padding_fraction_sorted_chunks"]
    for batching in ("sorted_chunks", "premise_buckets", "length_buckets"):
        assert result[f"padding_fraction_{batching}"] <= result["padding_fraction_plain"]
