#!/usr/bin/env bash
# One device call per stage, on the lent GPU after `bash .device/a/unpack-tvm.sh a` (carry .device/a):
#   STAGE=new       carry .device/b .device/xdist .device/tlsrc: the GPU test files in ROWS, TileLang's
#                   example dirs in ONLY (default gemm,gemm_sp; none: no example) against the recorded TileLang run, then
#                   a bench of bench/ (BENCH, default hand_written_mma.py; --sizes SIZES, none: no bench)
#                   in what is left of LIMIT seconds
#   STAGE=suite     the GPU suite (pytest -n 8, the cluster file aside)
#   STAGE=examples  TileLang's examples/ suite (JOBS, TIMEOUT, BUDGET), table against the record
#   STAGE=language  TileLang's testing/python/language suite (JOBS, BUDGET), table against the record
#   STAGE=perf      the example dirs whose tests print their kernels' speed, TileLang 0.1.15 and ours at
#                   once (after `bash bench/tilelang_suite_h200.sh unpack`, carry .device/tl, a call of its
#                   own), both timed by one shared timer one timing at a time (TIMING=1); the table
#                   (`table --perf`) gives TileLang-X's speed over TileLang's per printed number
# Each later stage needs only .device/xdist (and .device/tlsrc for the suites) while the machine stays
# warm; part b is unpacked once. Results and logs in $OUT. TileLang 0.1.15 itself runs beside ours
# through bench/tilelang_suite_h200.sh (its tree, .device/tl, travels in a call of its own).
set -uo pipefail
T0=$SECONDS
RES=${OUT:-/tmp/out}; mkdir -p "$RES"
if [[ ! -f /opt/tvmsite/.b_done ]]; then
  [[ -f .device/b/unpack-tvm.sh ]] || { echo "part b not unpacked yet: carry .device/b" >&2; exit 3; }
  bash .device/b/unpack-tvm.sh b || exit 3
  touch /opt/tvmsite/.b_done
fi
export PYTHONPATH=/opt/tvmsite:$PWD:$PWD/backends/cuda:$PWD/backends/cpu PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . -e backends/cpu -e backends/cuda >"$RES/pip.txt" 2>&1 \
  || { tail -5 "$RES/pip.txt"; exit 1; }
python3 -c "import xdist" 2>/dev/null || python3 -m pip install -q --no-deps --no-index .device/xdist/*.whl >>"$RES/pip.txt" 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
left() { echo $(( ${LIMIT:-580} - (SECONDS - T0) )); }
table() {  # table KIND: ours against TileLang's recorded H200 run
  python3 tools/tilelang_suite.py table "docs/tilelang-suite/tilelang-0.1.15-$1.json" "$RES/ours.json" --failures --perf \
    > "$RES/table.md" 2>&1
  head -"${2:-60}" "$RES/table.md"
}
case ${STAGE:-new} in
new)
  if [[ -n ${ROWS:-} ]]; then
    timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout=150 --timeout-method=thread $ROWS 2>&1 \
      | tee "$RES/rows.txt" | tail -5
  fi
  if [[ ${ONLY:-} != none ]]; then
    IMPL=ours ONLY=${ONLY:-gemm,gemm_sp} JOBS=2 TIMEOUT=${TIMEOUT:-150} BUDGET=${SBUDGET:-200} bash bench/tilelang_suite_h200.sh 2>&1 | tail -5
    table examples 40
  fi
  [[ ${SIZES:-4096} == none ]] || (cd bench && timeout $(( $(left) > 30 ? $(left) - 10 : 20 )) \
    python3 "${BENCH:-hand_written_mma.py}" --sizes "${SIZES:-4096}" 2>&1 | tee "$RES/bench.txt" | tail -12) ;;
suite)
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -n 8 --timeout=150 --timeout-method=thread backends/cuda/tests/gpu \
    --ignore=backends/cuda/tests/gpu/test_gpu_cluster.py 2>&1 | tee "$RES/suite.txt" | tail -5 ;;
examples)
  IMPL=ours JOBS=${JOBS:-6} TIMEOUT=${TIMEOUT:-200} BUDGET=${BUDGET:-500} bash bench/tilelang_suite_h200.sh 2>&1 | tail -5
  table examples ;;
language)
  IMPL=ours LANGUAGE=1 ONLY=language JOBS=${JOBS:-8} TIMEOUT=120 BUDGET=${BUDGET:-340} bash bench/tilelang_suite_h200.sh 2>&1 | tail -5
  table language 30 ;;
perf)
  PERF_DIRS=attention_sink,blocksparse_attention,cast,deepseek_deepgemm,deepseek_mla,deepseek_v32,dequantize_gemm
  PERF_DIRS+=,flash_attention,flash_decoding,gemm,gemm_sp,minference,seer_attention,topk,warp_specialize
  IMPL=both TIMING=1 ONLY=${ONLY:-$PERF_DIRS} JOBS=${JOBS:-4} TIMEOUT=${TIMEOUT:-200} \
    BUDGET=${BUDGET:-$(( $(left) - 40 ))} bash bench/tilelang_suite_h200.sh 2>&1 | tail -70 ;;
*) echo "STAGE must be new, suite, examples, language or perf" >&2; exit 2 ;;
esac
echo "total $((SECONDS - T0)) s"
