"""`benchmarks.device_profile`: a profiler trace read back as kernels by HLO
instruction, per step. The traces here are written by hand as XLA's XSpace (a GPU's
device plane as CUPTI fills it), so every figure of the summary is known exactly; the
slow quick-A/B test in tests/test_benchmark.py reads a real trace of the JAX scan."""

import gzip
import json

import pytest

from benchmarks import device_profile

pytest.importorskip("jax")

# Two steps on a GPU: five kernels on the compute stream, one copy on another stream that
# overlaps a kernel, and XLA's derived "XLA Ops" line, which repeats a kernel and must not
# count twice. Times in ps from the line's timestamp (ns).
TRACE = """
planes {
  id: 1 name: "/device:GPU:0"
  lines { id: 1 name: "Stream #13(Compute)" timestamp_ns: 1000
    events { metadata_id: 1 offset_ps: 0 duration_ps: 4000000 stats { metadata_id: 1 str_value: "fusion.1" } }
    events { metadata_id: 2 offset_ps: 6000000 duration_ps: 10000000 stats { metadata_id: 1 str_value: "gemm_fusion_dot.2" } }
    events { metadata_id: 1 offset_ps: 20000000 duration_ps: 4000000 stats { metadata_id: 1 str_value: "fusion.1" } }
    events { metadata_id: 2 offset_ps: 26000000 duration_ps: 10000000 stats { metadata_id: 1 str_value: "gemm_fusion_dot.2" } }
    events { metadata_id: 3 offset_ps: 38000000 duration_ps: 2000000 stats { metadata_id: 1 str_value: "loop_select_fusion.7" } }
  }
  lines { id: 2 name: "Stream #14(MemcpyD2D)" timestamp_ns: 1000
    events { metadata_id: 4 offset_ps: 8000000 duration_ps: 12000000 }
  }
  lines { id: 3 name: "XLA Ops" timestamp_ns: 1000
    events { metadata_id: 1 offset_ps: 0 duration_ps: 4000000 }
  }
  event_metadata { key: 1 value { id: 1 name: "loop_add_fusion" } }
  event_metadata { key: 2 value { id: 2 name: "gemm_fusion_dot_2_impl" } }
  event_metadata { key: 3 value { id: 3 name: "loop_select_fusion" } }
  event_metadata { key: 4 value { id: 4 name: "MemcpyD2D" } }
  stat_metadata { key: 1 value { id: 1 name: "hlo_op" } }
}
planes { id: 2 name: "/host:CPU" }
"""


@pytest.fixture
def trace_file(tmp_path):
    from jax._src.lib import _profile_data

    path = tmp_path / "gpu.xplane.pb"
    path.write_bytes(_profile_data.ProfileData.text_proto_to_serialized_xspace(TRACE))
    return str(path)


def test_a_gpu_trace_is_summarised_per_step_by_hlo_instruction(trace_file):
    summary = device_profile.summarize(trace_file, steps=2)
    # 6 events on the streams (5 kernels and the copy), not the derived line's 7th.
    assert summary["kernels"] == 3.0
    assert summary["lines"] == {"Stream #13(Compute)": 2.5, "Stream #14(MemcpyD2D)": 0.5}
    # Kernel time: 4+10+4+10+2+12 = 42 us in 2 steps.
    assert summary["kernel_ms"] == 0.021
    # Busy: [0,4] [6,20] (the copy, 8-20, spans the gemm's 6-16) [20,24] [26,36] [38,40]
    # = 4 + 14 + 4 + 10 + 2 = 34 us; span 0-40 us; the gaps 2, 2, 2 us.
    assert summary["busy_ms"] == 0.017 and summary["span_ms"] == 0.02
    assert summary["median_gap_us"] == 2.0
    assert summary["median_kernel_us"] == 10.0
    top = summary["top"]
    assert [entry["op"] for entry in top] == [
        "gemm_fusion_dot.2", "MemcpyD2D", "fusion.1", "loop_select_fusion.7"]
    assert top[0] == {"op": "gemm_fusion_dot.2", "kernel": "gemm_fusion_dot_2_impl",
                      "calls": 1.0, "us": 10.0}
    assert top[2]["calls"] == 1.0 and top[2]["us"] == 4.0
    assert top[3]["calls"] == 0.5 and top[3]["us"] == 1.0


def test_the_summary_keeps_the_top_and_says_when_there_is_nothing(trace_file, tmp_path):
    assert len(device_profile.summarize(trace_file, steps=2, top=2)["top"]) == 2
    from jax._src.lib import _profile_data

    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(_profile_data.ProfileData.text_proto_to_serialized_xspace(
        'planes { id: 1 name: "/device:GPU:0" }'))
    assert device_profile.summarize(str(empty), steps=1) == {
        "kernels": 0, "note": "no device events in the trace"}
    device_profile.write({"kernels": 1}, str(tmp_path))
    assert json.loads((tmp_path / "kernels.json").read_text()) == {"kernels": 1}


def test_a_cpu_trace_counts_the_runtime_thunks(tmp_path):
    """Without a device plane, the host's XLA thunks (events with an hlo_op) stand in;
    the profiler's own events (no hlo_op) are not kernels."""
    from jax._src.lib import _profile_data

    text = """
    planes { id: 1 name: "/host:CPU"
      lines { id: 1 name: "python" timestamp_ns: 0
        events { metadata_id: 2 offset_ps: 0 duration_ps: 9000000 } }
      lines { id: 2 name: "tf_XLAEigen/1" timestamp_ns: 0
        events { metadata_id: 1 offset_ps: 1000000 duration_ps: 3000000
                 stats { metadata_id: 1 str_value: "ynn_fusion.3" } } }
      event_metadata { key: 1 value { id: 1 name: "ynn_fusion.3" } }
      event_metadata { key: 2 value { id: 2 name: "trace" } }
      stat_metadata { key: 1 value { id: 1 name: "hlo_op" } }
    }"""
    path = tmp_path / "cpu.xplane.pb"
    path.write_bytes(_profile_data.ProfileData.text_proto_to_serialized_xspace(text))
    summary = device_profile.summarize(str(path), steps=1)
    assert summary["kernels"] == 1.0 and summary["busy_ms"] == 0.003
    assert summary["top"] == [{"op": "ynn_fusion.3", "kernel": "ynn_fusion.3", "calls": 1.0,
                               "us": 3.0}]


def test_union_and_gaps_of_intervals():
    intervals = [(10, 20), (0, 5), (15, 30), (40, 41)]
    assert device_profile._union(intervals) == 5 + 20 + 1
    assert device_profile._gaps(intervals) == [5, 10]
    assert device_profile._median([]) == 0.0


def test_the_trace_copy_beside_the_summary_is_the_profilers_file(tmp_path):
    """`trace` runs the function under JAX's profiler and leaves a gzip of the XSpace
    file where the tool that fetches results finds it (two folders down at most)."""
    import jax
    import jax.numpy as jnp

    step = jax.jit(lambda state, x: (None, jnp.tanh(state @ x)), donate_argnums=0)
    x = jnp.eye(8)
    path = device_profile.trace(step, (jnp.ones((8, 8)), x), 3, str(tmp_path))
    with open(path, "rb") as original, gzip.open(tmp_path / "trace.xplane.pb.gz") as copy:
        assert copy.read() == original.read()
    summary = device_profile.summarize(path, steps=3)
    assert summary["kernels"] >= 1 and summary["busy_ms"] <= summary["span_ms"]
