#!/usr/bin/env bash
# The main job on embedded defaults: builds strata and runs `strata demo`,
# which writes a stream, reads it back, verifies it and reports what it
# measured. Data goes to a fresh directory that is removed afterwards.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/build.sh" "$here/build" >/dev/null
work="$(mktemp -d /tmp/strata-demo-XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$here/build/strata" demo --data-dir "$work" "$@"
