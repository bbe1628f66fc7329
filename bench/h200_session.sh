#!/usr/bin/env bash
# Everything the CUDA backend should show on the lent H200, in one call (after unpack-tvm.sh a/b):
# packages installed as a user would, doctor, the main job and every example on target="auto",
# the launch-overhead benchmark and the compute-sanitizer checks. Logs go to $OUT.
#   bash .device/b/unpack-tvm.sh b && bash bench/h200_session.sh      (SKIP_BENCH=1: no table; ONLY_BENCH=1: only the benchmarks; SWEEP=1: + variants;
#   FOCUS=1: + chosen variants timed together; NCU=1: + Nsight Compute of GEMM and attention against cuBLAS/cuDNN (NCU_CASES: which of gemm attention ampere; NCU_METRICS: extra --metrics; NCU_SOURCE=<cases>: per-SASS-line stall samples, no NCU=1 needed);
#   AMPERE=1: + mma.sync path; STREAM_K=1: + bench/stream_k.py; CAUSAL_PROBE=1: + causal attention's tile schedules (bench/causal_probe.py, + ncu); NO_AUTOTUNE=1: without the autotuner timing;
#   TESTS="<pytest paths/args>": only these GPU tests (8 xdist workers when .device/xdist is carried too; TESTS_TIMEOUT s; TESTS_K: a -k expression) (TESTS_ONLY=1: and no examples, overhead, sanitizers); FOCUS_GEMM / FOCUS_ATTN: the variant
#   indices FOCUS times, FOCUS_NO_AMPERE=1: without ampere_attention)
set -uo pipefail
export PYTHONPATH=/opt/tvmsite PYTHONUNBUFFERED=1
RESULTS=${OUT:-/tmp/out}; OUT=$(mktemp -d); mkdir -p "$RESULTS"  # logs here, one tarball to $RESULTS
python3 -m pip install -q --no-deps --no-build-isolation -e . -e backends/cpu -e backends/cuda >"$OUT/pip.txt" 2>&1 \
  || { echo "pip install failed"; tail -5 "$OUT/pip.txt"; exit 1; }
# pytest-xdist (no network there): wheels carried in .device/xdist (pip download pytest-xdist execnet);
# the GPU tests are nvcc-bound, so 8 workers take them from ~10 minutes to ~2
# pytest-timeout from the same folder: a test that hangs (a barrier protocol error, blocked in a CUDA call,
# so the thread method: the worker exits and xdist starts another) fails after 150 s
# instead of holding its worker, and the tests queued behind it, until the step's limit
PAR=""
if python3 -c "import xdist" 2>/dev/null || { ls .device/xdist/*.whl >/dev/null 2>&1 && \
    python3 -m pip install -q --no-deps --no-index .device/xdist/*.whl >"$OUT/xdist.txt" 2>&1; }; then PAR="-n 8"; fi
python3 -c "import pytest_timeout" 2>/dev/null && PAR="$PAR --timeout=${TEST_TIMEOUT:-150} --timeout-method=thread"
status=()
step() {  # step NAME TIMEOUT COMMAND...: run, keep the log, remember pass/fail
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1; local rc=$?
  status+=("$(printf '%-28s %s' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED rc=$rc")")")
  tar czf "$RESULTS/logs.tgz" -C "$OUT" .  # after every step: a run cut off at the device's limit still returns its logs
}
if [[ ${ONLY_BENCH:-0} != 1 ]]; then  # ONLY_BENCH=1: the benchmarks alone (a second call)
  step doctor 60 python3 -m tilelang_core doctor --no-toolchains
  if [[ -n ${TESTS:-} ]]; then  # a chosen subset of the GPU tests
    step gpu_tests "${TESTS_TIMEOUT:-400}" python3 -m pytest -q -p no:cacheprovider $PAR $TESTS ${TESTS_K:+-k "$TESTS_K"}
  else
    step gpu_tests 420 python3 -m pytest -q -p no:cacheprovider $PAR backends/cuda/tests/gpu \
      --ignore=backends/cuda/tests/gpu/test_gpu_cluster.py
    step gpu_cluster 90 python3 -m pytest -q -p no:cacheprovider backends/cuda/tests/gpu/test_gpu_cluster.py  # a hang stays here
  fi
fi
if [[ ${ONLY_BENCH:-0} != 1 && ${TESTS_ONLY:-0} != 1 ]]; then  # TESTS_ONLY=1: no examples, overhead, sanitizers
  step quickstart 120 python3 examples/quickstart.py
  for ex in gemm/gemm.py gemm/gemm_splitk.py softmax/softmax.py norm/rms_norm.py norm/layer_norm.py \
            attention/flash_attention.py elementwise/scale_add.py; do
    step "$(basename "$ex" .py)" 120 python3 "examples/$ex"
  done
  step flash_attention_causal 120 python3 examples/attention/flash_attention.py --is-causal
  step gemm_transposed 120 python3 examples/gemm/gemm.py --trans-a --trans-b
  step mla_decode 180 python3 examples/attention/mla_decode.py --batch 8 --heads 128 --dim 512 --pe-dim 64 \
    --max-len 4096 --num-split 4
  step call_overhead 180 python3 bench/cuda_call_overhead.py
  step launch_floor 120 python3 bench/cuda_launch_floor.py
  [[ ${NO_AUTOTUNE:-0} == 1 ]] || step autotune_cuda 400 python3 bench/autotune_compile.py --target cuda --size 4096 --repeats 1
  for tool in memcheck racecheck synccheck; do
    step "sanitize_$tool" 240 compute-sanitizer --tool "$tool" --error-exitcode 9 python3 bench/cuda_sanitize_cases.py
  done
fi
[[ ${SKIP_BENCH:-0} == 1 ]] || step cuda_bench 400 python3 bench/cuda_bench.py
[[ ${SWEEP:-0} == 1 ]] && { step hopper_sweep 400 python3 bench/hopper_sweep.py
                          step hopper_sweep_cluster 120 python3 bench/hopper_sweep.py --cluster; }
[[ ${STREAM_K:-0} == 1 ]] && step stream_k 300 python3 bench/stream_k.py
[[ ${FOCUS:-0} == 1 ]] && { step focus_gemm 300 python3 bench/hopper_sweep.py --only gemm --pick "${FOCUS_GEMM:-0,9,10,12,17,18}" --together
                          step focus_gemm_bf16 300 python3 bench/hopper_sweep.py --only gemm --dtype bfloat16 --pick "${FOCUS_GEMM:-0,9,10,12,17,18}" --together
                          step focus_attention 300 python3 bench/hopper_sweep.py --only attention --pick "${FOCUS_ATTN:-0,11,13,14,15}" --together
                          [[ ${FOCUS_NO_AMPERE:-0} == 1 ]] || step ampere_attention 300 python3 bench/ampere_attention.py; }
[[ ${NCU:-0} == 1 ]] && step ncu 300 bash -c 'cd bench && ncu --clock-control none --nvtx --nvtx-include "prof/" \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    ${NCU_METRICS:+--metrics "$NCU_METRICS"} python3 ncu_profile.py ${NCU_CASES:-gemm attention}'
# NCU_SOURCE="<ncu_profile.py cases>": warp-stall samples per SASS line (ncu source counters), one
# report per case (the CSV export reads one kernel), as ncu_source_<case>.csv.gz in the logs, for
# reading on the development machine, with each case's duration in ncu_source.txt
[[ -n ${NCU_SOURCE:-} ]] && step ncu_source 500 bash -c 'cd bench && for case in $NCU_SOURCE; do
    ncu --clock-control none --nvtx --nvtx-include "prof/" --section SourceCounters --section SpeedOfLight \
      -f -o "$OUT/source" python3 ncu_profile.py "$case" >/dev/null || exit 1
    echo "$case: $(ncu -i "$OUT/source.ncu-rep" --page details | grep -E "Duration" | tr -s " ")"
    ncu -i "$OUT/source.ncu-rep" --page source --csv --print-source sass | gzip >"$OUT/ncu_source_$case.csv.gz"
  done; rm -f "$OUT/source.ncu-rep"'
[[ ${CAUSAL_PROBE:-0} == 1 ]] && { step causal_probe 300 python3 bench/causal_probe.py
    step causal_ncu 300 bash -c 'cd bench && ncu --clock-control none --nvtx --nvtx-include "prof/" --section SpeedOfLight \
      --section LaunchStats --section WarpStateStats --section SchedulerStats python3 causal_probe.py --ncu'; }
[[ ${AMPERE:-0} == 1 ]] && { step ampere_gemm 300 python3 bench/ampere_gemm.py; step ampere_attention 300 python3 bench/ampere_attention.py; }
echo "== doctor (auto)"; [[ -f "$OUT/doctor.txt" ]] && grep -E "cuda |evidence|resolves to" "$OUT/doctor.txt" | head -6
echo "== examples"; grep -h -E "relative error" "$OUT"/*.txt | sed 's/^/  /'
[[ -f "$OUT/quickstart.txt" ]] && { echo "== quickstart"; grep -E "first call|OK|FAILED" "$OUT/quickstart.txt" | head -3; }
[[ -f "$OUT/gpu_tests.txt" ]] && { echo "== gpu tests"; tail -1 "$OUT/gpu_tests.txt"; tail -1 "$OUT/gpu_cluster.txt" 2>/dev/null; }
[[ -f "$OUT/call_overhead.txt" ]] && { echo "== launch overhead"; sed -n '3,12p' "$OUT/call_overhead.txt"; }
[[ -f "$OUT/launch_floor.txt" ]] && { echo "== launch floor (C++)"; cat "$OUT/launch_floor.txt"; }
[[ -f "$OUT/autotune_cuda.txt" ]] && { echo "== autotune (16 configs, cuda)"; grep -E "search|compile" "$OUT/autotune_cuda.txt" | head -5; }
for tool in memcheck racecheck synccheck; do
  [[ -f "$OUT/sanitize_$tool.txt" ]] && { echo "== $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error" "$OUT/sanitize_$tool.txt" | tail -2; }
done
[[ -f "$OUT/cuda_bench.txt" ]] && { echo "== benchmark table"; sed -n '/^NVIDIA/,$p' "$OUT/cuda_bench.txt"; }
[[ -f "$OUT/causal_probe.txt" ]] && { echo "== causal probe"; grep -E "^\||built|rror" "$OUT/causal_probe.txt"; }
[[ -f "$OUT/causal_ncu.txt" ]] && { echo "== causal ncu"; grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Compute \(SM\)|Issue Slots Busy|Warp Cycles Per Issued|Grid Size|Registers Per|No Eligible" "$OUT/causal_ncu.txt" | cut -c1-100; }
[[ -f "$OUT/ncu_source.txt" ]] && { echo "== ncu source"; grep -E "Duration|rror" "$OUT/ncu_source.txt"; }
[[ -f "$OUT/ncu.txt" ]] && { echo "== ncu"; grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Compute \(SM\)|Issue Slots Busy|Warp Cycles Per Issued" "$OUT/ncu.txt" | cut -c1-100; }
for f in stream_k hopper_sweep hopper_sweep_cluster focus_gemm focus_gemm_bf16 focus_attention; do
  [[ -f "$OUT/$f.txt" ]] && { echo "== $f"; grep -E "TFLOP|ERROR|timed in turns|^\|" "$OUT/$f.txt"; }
done
for f in ampere_gemm ampere_attention; do [[ -f "$OUT/$f.txt" ]] && { echo "== $f"; grep -v -i warn "$OUT/$f.txt" | tail -14; }; done
echo "== steps"; printf '  %s\n' "${status[@]}"
for s in "${status[@]}"; do  # the tail of every failed step's log, since $OUT brings back only a few files
  [[ $s == *FAILED* ]] && { echo "== tail of ${s%% *}"; tail -40 "$OUT/${s%% *}.txt"; }
done
tar czf "$RESULTS/logs.tgz" -C "$OUT" .  # the device returns only a few files: one archive, all logs
