#!/bin/bash
# The next GPU session's measurements, one call on one warm machine (about
# 8 of the 15 minutes on an H200; records/performance.md, "Prepared for the next GPU
# session"). Carry gpu-wheels/ (../shared/gpu-wheels/*.whl) and
# settings/snli25k_glove50.npz; run from the repository's root:
#
#     bash benchmarks/gpu_session.sh             # on the GPU machine; results under $OUT
#     TINY=1 OUT=/tmp/out bash benchmarks/gpu_session.sh   # here, JAX on the CPU, tiny
#     DRY=1 OUT=/tmp/out bash benchmarks/gpu_session.sh    # prints the commands alone
#
# Each line appends its record under $OUT before the next starts, so a call cut short
# keeps what it measured (the whole script: about 570 s on an H200, so give the call
# timeout_s=590). In order of what they decide:
#   1. the stacked scan (the default), profiled: where the device's 1.35 ms a step goes
#      ($OUT/prof/kernels.json, the program's HLO, the trace);
#   2. the same in bfloat16 (Keras' mixed_bfloat16): counted without a GPU, the step
#      moves about 1.47 GB instead of 2.37 (`program_size --gpu_kernels`, "bytes");
#   3. the scan at 96 x 48, the long shape: with 1, the line of a step's cost against
#      the tokens it reads, as the GPU trains (`StepCosts.fit` of scan.jsonl); counted,
#      8.8 GB a step, 3.7 times 1's;
#   4. the stacked scan again: the machine's noise;
#   5. the GPU check, as it is by default (its shapes now priced in one pass: squares),
#      XLA's autotuning results written out ($OUT/autotune.txt): a later session can
#      time the check's compile with them loaded (--xla_gpu_load_autotune_results_from;
#      autotuning was 6-8 s of a 22 s training program's compile on the first H200);
#   6. where 2 beat 1 and 4, the paper's epoch of the GPU check in bfloat16;
#   7. the scan with 5's autotuning results loaded: its first call (the compile) against
#      1's and 4's, its step the same;
#   8. matmuls by cuBLASLt instead of Triton (XLA fuses a bias and a ReLU into a
#      cuBLASLt matmul: counted, 24 kernels fewer a step);
#   9. float32 matmuls at full precision: slower than 1 where XLA's default already
#      uses the tensor cores (TF32).
set -o pipefail
export PYTHONUNBUFFERED=1 KERAS_BACKEND=jax
OUT=${OUT:?set OUT to a folder for the results}
if [ -n "$DRY" ]; then
    PY=python STEPS=1024 CHUNK=32 SIZE="" CHECK="" STUDY=""
elif [ -n "$TINY" ]; then
    PY=python STEPS=64 CHUNK=16 SIZE="--size=embedding_dim=32,num_heads=2,ffn_dim=64"
    CHECK="--size=embedding_dim=16,num_heads=2,ffn_dim=32 --pairs=4096 --dev_pairs=640"
    STUDY="--study_epochs=2"
else
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        gpu-wheels/*.whl || exit 1
    export PYTHONPATH=/tmp/site:.
    PY=python3 STEPS=1024 CHUNK=32 SIZE="" CHECK="" STUDY=""
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv \
        2>&1 | tee "$OUT/log.txt"
fi
scan="$PY -m benchmarks.shape_costs --shapes=23x24 --steps=$STEPS --scan_only=$CHUNK $SIZE"
scan="$scan --output=$OUT/scan.jsonl"
started=$(date +%s)
step() {  # step NAME SECONDS COMMAND...: runs it, logs its last lines and the time so far
    local name=$1 limit=$2
    shift 2
    if [ -n "$DRY" ]; then printf "%q " "$@"; echo; return; fi
    timeout "$limit" "$@" 2>&1 | grep -v "^[IW]0000" | tail -n 4 | tee -a "$OUT/log.txt"
    echo "== $name done at $(( $(date +%s) - started )) s" | tee -a "$OUT/log.txt"
}
step "1 stacked, profiled" 150 $scan --profile="$OUT/prof"
[ -n "$DRY" ] || rm -rf "$OUT/prof/plugins"  # four folders down: it would not come back (the copy does)
step "2 bfloat16" 100 $scan --mixed_precision=mixed_bfloat16
step "3 the long shape" 120 ${scan/23x24/96x48}
step "4 stacked again" 100 $scan
step "5 gpu check" 240 env XLA_FLAGS="--xla_gpu_dump_autotune_results_to=$OUT/autotune.txt" \
    $PY -m benchmarks.gpu_check --setting=settings/snli25k_glove50.npz $CHECK $STUDY \
    --output="$OUT/gpu_check.json"
if [ -n "$DRY" ] || \
        $PY -m benchmarks.shape_costs --faster="$OUT/scan.jsonl" \
            --mixed_precision=mixed_bfloat16
then
    step "6 gpu check, part 1 in bfloat16" 150 $PY -m benchmarks.gpu_check $CHECK \
        --mixed_precision=mixed_bfloat16 --output="$OUT/gpu_check_bf16.json"
fi
if [ -n "$DRY" ] || [ -s "$OUT/autotune.txt" ]; then
    step "7 autotuning loaded" 100 env \
        XLA_FLAGS="--xla_gpu_load_autotune_results_from=$OUT/autotune.txt" $scan
fi
step "8 cublasLt matmuls" 100 env \
    XLA_FLAGS="--xla_gpu_enable_triton_gemm=false --xla_gpu_enable_cublaslt=true" $scan
step "9 float32 matmuls" 100 env JAX_DEFAULT_MATMUL_PRECISION=float32 $scan
