#!/usr/bin/env bash
# One entry point for a fresh machine: sets up .venv (first run only), then
#   bash tools/dev.sh demo   compile and run a real kernel on the best target present, show the code
#   bash tools/dev.sh test   run the whole test suite (what CI runs)
#   bash tools/dev.sh setup  only the set-up
#   bash tools/dev.sh wheels [DIR]  every distribution's wheel into DIR (default dist/wheelhouse)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${TILELANG_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}
PACKAGES=(. backends/cpu backends/cuda backends/hip backends/metal backends/ascend plugins/vendor-template)

setup() {
  bash "$ROOT/tools/install-toolchains.sh"  # clang-19/lld-19 for the HIP and Metal compile checks
  # Reinstall only when the requirements or a package definition changed.
  local stamp="$VENV/.tilelang-setup" want
  want=$(cat requirements-dev.txt "${PACKAGES[@]/%//pyproject.toml}" | sha256sum | cut -d' ' -f1)
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then return; fi
  echo "== setting up $VENV (first run: about a minute)"
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r requirements-dev.txt
  local args=()
  for p in "${PACKAGES[@]}"; do args+=(-e "$p"); done
  # --no-deps: every dependency is pinned in requirements-dev.txt; the packages are local.
  "$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps "${args[@]}"
  echo "$want" > "$stamp"
}

cmd=${1:-test}
shift || true
setup
case "$cmd" in
  setup) ;;
  demo) exec "$VENV/bin/python" examples/quickstart.py "$@" ;;
  test) exec "$VENV/bin/python" -m pytest -q "$@" ;;
  wheels)
    # built offline from the sources (no build isolation: the venv's setuptools); install with
    #   pip install --find-links DIR tilelang-core tilelang-cpu   (or -cuda, -hip, -metal, -ascend)
    out=${1:-dist/wheelhouse}
    "$VENV/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$out" "${PACKAGES[@]}"
    ls "$out"/*.whl ;;
  *) echo "usage: bash tools/dev.sh demo|test|setup|wheels" >&2; exit 2 ;;
esac
