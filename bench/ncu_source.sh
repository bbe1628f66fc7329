#!/usr/bin/env bash
# Warp-stall samples per SASS instruction (ncu source counters) of the kernels ncu_profile.py
# profiles, as CSV in $OUT, for reading on the development machine:
#   bash bench/ncu_source.sh ampere-causal        (after unpack-tvm.sh b; PYTHONPATH as h200_session.sh sets it)
set -uo pipefail
export PYTHONPATH=/opt/tvmsite PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . -e backends/cpu -e backends/cuda >"$OUT/pip.txt" 2>&1
cd bench && timeout 400 ncu --clock-control none --nvtx --nvtx-include "prof/" --section SourceCounters \
  --section WarpStateStats -f -o "$OUT/source" python3 ncu_profile.py "$@" >"$OUT/ncu_run.txt" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/ncu_run.txt"
ncu -i "$OUT/source.ncu-rep" --page source --csv --print-source sass >"$OUT/source.csv" 2>"$OUT/source_err.txt"
echo "csv rc=$? $(wc -l <"$OUT/source.csv") lines"; head -c 600 "$OUT/source.csv"; head -3 "$OUT/source_err.txt"
gzip -f "$OUT/source.csv"; rm -f "$OUT/source.ncu-rep"
