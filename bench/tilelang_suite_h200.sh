#!/usr/bin/env bash
# TileLang's own test suite on the lent H200, TileLang 0.1.15 and TileLang-X side by side in one call
# (tools/tilelang_suite.py; docs/tilelang-suite.md has the latest table).
#
# Carried here beforehand (see ../shared/device/README.md for the TVM half):
#   .device/a, .device/b   apache-tvm for TileLang-X (../shared/device/pack-tvm.sh), unpacked to /opt/tvmsite
#   .device/tl             TileLang 0.1.15 + its pins as one `pip install --target` tree (tlsite.tar.xz);
#                          `bash bench/tilelang_suite_h200.sh unpack` puts it at /opt/tlsite
#   .device/tlsrc          TileLang's examples/ and testing/python/language/ (tools/tilelang_suite.py export)
#
#   bash bench/tilelang_suite_h200.sh unpack          # a call of its own (the tarball is 40 MB)
#   ONLY=gemm,norm LANGUAGE=0 bash bench/tilelang_suite_h200.sh   # then the suites; results in $OUT
# IMPL=ours|tilelang|both (default both), JOBS directories at once per implementation (default 4),
# TIMING=1 the examples' speed lines measured by one timer shared by both, one timing at a time
# (tools/tilelang_suite_plugin.py; `table --perf` then gives ratios),
# TIMEOUT seconds per test (default 200), LANGUAGE=1 adds testing/python/language, BUDGET seconds for
# both runs (default 520: the table is still printed inside the device's 600 s; directories not
# finished by then are missing from the JSON and the table says so).
set -uo pipefail
RESULTS=${OUT:-/tmp/out}; mkdir -p "$RESULTS"
if [[ ${1:-} == unpack ]]; then
  mkdir -p /opt && tar -C /opt -xJf .device/tl/tlsite.tar.xz && echo "unpacked TileLang 0.1.15 into /opt/tlsite"
  exit $?
fi
test -f /opt/tvmsite/tvm/lib/libtvm_compiler.so || { echo "/opt/tvmsite is missing: send .device/a and .device/b first" >&2; exit 3; }
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . -e backends/cpu -e backends/cuda >"$RESULTS/pip.txt" 2>&1 \
  || { echo "pip install failed"; tail -5 "$RESULTS/pip.txt"; exit 1; }
args=(--src .device/tlsrc --timeout "${TIMEOUT:-200}" --jobs "${JOBS:-4}")
[[ -n ${ONLY:-} ]] && args+=(--only "$ONLY")
[[ ${LANGUAGE:-0} == 1 ]] || args+=(--no-language)
# TIMING=1: both implementations' do_bench become one shared timer, timed parts one at a time
[[ ${TIMING:-0} == 1 ]] && args+=(--timing /tmp/tlsuite-gpu.lock)
IMPL=${IMPL:-both}
# TileLang-X alone compares against the reference JSON of docs/tilelang-suite/ and needs no /opt/tlsite
if [[ $IMPL != ours ]]; then
  test -d /opt/tlsite/tilelang || { echo "/opt/tlsite is missing: run 'bash bench/tilelang_suite_h200.sh unpack' first" >&2; exit 3; }
fi
pids=()
if [[ $IMPL == both || $IMPL == tilelang ]]; then
  # TileLang pins an older apache-tvm-ffi and brings its own TVM: nothing of ours on its path
  env -u PYTHONPATH PYTHONPATH=/opt/tlsite TILELANG_CACHE_DIR=/tmp/tlcache-tilelang \
    timeout -k 5 "${BUDGET:-520}" python3 tools/tilelang_suite.py run --impl tilelang --out "$RESULTS/tilelang.json" "${args[@]}" \
    > "$RESULTS/tilelang.txt" 2>&1 &
  pids+=($!)
fi
if [[ $IMPL == both || $IMPL == ours ]]; then
  env PYTHONPATH=/opt/tvmsite TILELANG_CACHE_DIR=/tmp/tlcache-ours \
    timeout -k 5 "${BUDGET:-520}" python3 tools/tilelang_suite.py run --impl ours --out "$RESULTS/ours.json" "${args[@]}" \
    > "$RESULTS/ours.txt" 2>&1 &
  pids+=($!)
fi
wait "${pids[@]}"
tail -n 3 "$RESULTS"/*.txt
# the logs of every directory, one tarball (the reply carries at most 8 files)
tar czf "$RESULTS/logs.tgz" -C "$RESULTS" $(cd "$RESULTS" && ls -d *.logs 2>/dev/null) && rm -rf "$RESULTS"/*.logs
if [[ -f $RESULTS/tilelang.json && -f $RESULTS/ours.json ]]; then
  python3 tools/tilelang_suite.py table "$RESULTS/tilelang.json" "$RESULTS/ours.json" --failures \
    $([[ ${TIMING:-0} == 1 ]] && echo --perf) > "$RESULTS/table.md"
  head -n 45 "$RESULTS/table.md"
fi
