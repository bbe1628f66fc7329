#!/usr/bin/env bash
# Nsight Compute on TileLang's example tests, TileLang 0.1.15 and TileLang-X one after the other, on
# the lent GPU (after the TVM parts and `bash bench/tilelang_suite_h200.sh unpack`, as for
# STAGE=perf): per kernel, duration, SM and DRAM throughput, grid, registers, achieved occupancy.
#   CASES="deepseek_deepgemm/test_example_deepgemm_fp8_2xAcc.py::test_deepgemm_fp8_2xAcc=tl_gemm" \
#     bash bench/ncu_examples.sh
# CASES: space-separated test=kernel-regex (the regex picks the example's kernels out of torch's);
# COUNT kernels profiled per case (default 6). CSV per case and implementation in $OUT.
set -uo pipefail
RES=${OUT:-/tmp/out}; mkdir -p "$RES"
METRICS=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
METRICS+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size
METRICS+=,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
for impl in tilelang ours; do
  rm -rf "/tmp/ncu-$impl"
  python3 tools/tilelang_suite.py prepare --src .device/tlsrc --impl $impl --out "/tmp/ncu-$impl"
done
for case in ${CASES:?}; do
  test=${case%=*}; regex=${case##*=}; dir=${test%%/*}; rest=${test#*/}
  for impl in tilelang ours; do
    if [[ $impl == tilelang ]]; then path=(env -u PYTHONPATH PYTHONPATH=/opt/tlsite TILELANG_CACHE_DIR=/tmp/tlcache-tilelang)
    else path=(env PYTHONPATH=/opt/tvmsite TILELANG_CACHE_DIR=/tmp/tlcache-ours); fi
    name=$(echo "${dir}_${rest##*::}_$impl" | tr -c 'A-Za-z0-9_\n' _)
    (cd "/tmp/ncu-$impl/examples/$dir" && timeout 240 "${path[@]}" ncu --clock-control none --kernel-name "regex:$regex" \
      --launch-count "${COUNT:-6}" --metrics "$METRICS" --csv --page raw \
      python3 -m pytest -q -x -p no:cacheprovider "$rest" > "$RES/$name.csv" 2> "$RES/$name.err")
    echo "== $impl $test"
    python3 - "$RES/$name.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if len(rows) < 3:
    print("  no kernel profiled"); sys.exit()
head = rows[0]
col = {k: head.index(k) for k in head}
unit = rows[1][col["gpu__time_duration.sum"]] if "gpu__time_duration.sum" in col else "nsecond"
to_us = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, float("nan"))
for r in rows[2:]:
    get = lambda k: r[col[k]] if k in col else "?"
    print(f"  {get('Kernel Name')[:48]:48} {float(get('gpu__time_duration.sum').replace(',', '')) * to_us:9.1f} us  "
          f"sm {get('sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6}%  "
          f"dram {get('dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6}%  grid {get('launch__grid_size')} "
          f"x {get('launch__block_size')}  regs {get('launch__registers_per_thread')}  "
          f"occ {get('sm__warps_active.avg.pct_of_peak_sustained_active')}%")
PY
  done
done
