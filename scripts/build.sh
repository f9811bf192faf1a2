#!/usr/bin/env bash
# Configures and builds strata with CMake + Ninja.
#   scripts/build.sh [build-dir] [extra cmake args...]
# Default build dir: build/ (RelWithDebInfo, -Wall -Wextra -Werror).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$here/build}"
shift || true
# The project's own builds treat warnings as errors (CMakeLists.txt leaves
# -Werror off for other builds); a later argument may still turn it off.
cmake -S "$here" -B "$dir" -G Ninja -DSTRATA_WERROR=ON "$@" >/dev/null
ninja -C "$dir"
