#!/usr/bin/env bash
# Builds strata's Debian package from a regular build (docs/PACKAGE.md) and
# prints its path. Usage: scripts/package.sh [BUILD_DIR]  (default: build,
# configured and built first by scripts/build.sh when absent).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
if [ ! -f "$build/CPackConfig.cmake" ]; then
  "$here/scripts/build.sh" "$build" >&2
fi
cmake --build "$build" --target strata >&2
out="$build/package"
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >&2)
ls -t "$out"/strata_*.deb | head -n 1
