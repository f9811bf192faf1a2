#!/usr/bin/env bash
# The main job on embedded defaults: builds strata and runs `strata demo`,
# which runs a node (a local directory as object store, the embedded
# catalog), writes a stream, uploads it in fragments, lets local retention
# drop the tiered segments, reads every record back across both tiers and
# verifies it, and reports what it measured. It works in a fresh temporary
# directory that it removes afterwards. Extra arguments go to `strata demo`
# (e.g. --s3-endpoint URL --bucket B, --json).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/build.sh" "$here/build" >/dev/null
exec "$here/build/strata" demo "$@"
