#!/usr/bin/env bash
# Configures and builds strata with CMake + Ninja.
#   scripts/build.sh [build-dir] [extra cmake args...]
# Default build dir: build/ (RelWithDebInfo, -Wall -Wextra -Werror).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$here/build}"
shift || true
cmake -S "$here" -B "$dir" -G Ninja "$@" >/dev/null
ninja -C "$dir"
