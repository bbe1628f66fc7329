#!/usr/bin/env bash
# Toolchains that let CI verify the AMD and Apple backends without their hardware
# (../shared/TOOLCHAINS.md): clang-19 + lld-19 + llvm-19 from Debian 12. Needs root and apt;
# elsewhere it says what is missing and the HIP/Metal compile tests skip with that reason.
set -euo pipefail
need=()
for tool in clang-19 ld.lld-19 llvm-objdump-19; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [[ ${#need[@]} -eq 0 ]]; then exit 0; fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${need[*]} missing and no root apt here: HIP/Metal compile checks will be skipped" >&2
  exit 0
fi
echo "== installing clang-19 lld-19 llvm-19 (HIP/Metal compile checks, ~70 MB)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends clang-19 lld-19 llvm-19 >/dev/null
