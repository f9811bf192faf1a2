#!/usr/bin/env bash
# The Debian package, installed for real: builds it (scripts/package.sh),
# checks its contents and dependencies, installs it with dpkg -i, checks the
# service's user, directories, permissions and unit (systemd-analyze
# verify), runs the packaged `strata serve` as the packaged user with the
# packaged configuration (ports moved to free ones, so that parallel tests
# do not collide), creates a stream through its management API, stops it
# with SIGTERM (exit 0), then removes and purges the package.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR. Exit 77: skipped (not root).
set -euo pipefail
build="$1"
src="$2"
if [ "$(id -u)" != 0 ]; then
  echo "skipped: installing a package needs root" >&2
  exit 77
fi
if dpkg-query -W -f='${Status}' strata 2>/dev/null | grep -q "install ok installed"; then
  echo "a strata package is installed on this machine already; not touching it" >&2
  exit 1
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
work="$(mktemp -d /tmp/strata-package-XXXXXX)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  dpkg -P strata >/dev/null 2>&1 || true
  rm -rf /var/lib/strata "$work"
}
trap cleanup EXIT

deb="$("$src/scripts/package.sh" "$build")"
echo "package: $deb"
contents="$(dpkg-deb -c "$deb")"
for f in ./usr/bin/strata ./usr/lib/systemd/system/strata.service ./etc/strata/strata.json \
  ./usr/share/doc/strata/PACKAGE.md; do
  grep -q " $f\$" <<<"$contents" || fail "$f is not in the package"
done
depends="$(dpkg-deb -f "$deb" Depends)"
echo "depends: $depends"
for lib in libcurl4 libssl3 adduser; do
  grep -q "$lib" <<<"$depends" || fail "the package does not depend on $lib"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$("$build/strata" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1)" ] ||
  fail "the package's version is not the binary's"

dpkg -i "$deb"
id strata >/dev/null || fail "no user strata"
[ "$(stat -c %U:%G /var/lib/strata)" = strata:strata ] || fail "/var/lib/strata is not the service's"
[ "$(stat -c %a:%U:%G /etc/strata/strata.json)" = 640:root:strata ] ||
  fail "/etc/strata/strata.json is $(stat -c %a:%U:%G /etc/strata/strata.json), not 640 root:strata"
verify="$(systemd-analyze verify /usr/lib/systemd/system/strata.service 2>&1 || true)"
# In a container without a running systemd, verify still checks the unit;
# only its complaints about the unit itself count.
if grep -i "strata.service" <<<"$verify"; then fail "systemd-analyze verify: $verify"; fi
/usr/bin/strata --version

# The packaged configuration, as the service runs it (ExecStart: the
# user's identity, then exec, so SIGTERM reaches strata itself), with only
# the ports moved.
setpriv --reuid=strata --regid=strata --init-groups /usr/bin/strata serve --config /etc/strata/strata.json \
  --listen 127.0.0.1:0 --http 127.0.0.1:0 >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  grep -q "http on" "$work/serve.log" && break
  sleep 0.1
done
http="$(grep -oE 'http on [0-9.]+:[0-9]+' "$work/serve.log" | awk '{print $3}')"
[ -n "$http" ] || { cat "$work/serve.log" >&2; fail "the packaged strata serve did not start"; }
status="$(curl -sf "http://$http/status")"
grep -q '"data_dir":"/var/lib/strata/data"' <<<"$status" || fail "data_dir: $status"
grep -q 'fs:/var/lib/strata/objects' <<<"$status" || fail "object store: $status"
curl -sf -u guest:guest -X PUT -H 'content-type: application/json' -d '{}' \
  "http://$http/api/streams/packaged" >/dev/null || fail "creating a stream through the API"
curl -sf -u guest:guest "http://$http/api/streams/packaged" | grep -q '"packaged"' ||
  fail "the stream is not listed"
[ -d /var/lib/strata/data/streams ] || fail "no stream directory under /var/lib/strata/data"
[ "$(stat -c %U /var/lib/strata/data)" = strata ] || fail "the data is not the service user's"
kill -TERM "$server_pid"
rc=0
wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" = 0 ] || { cat "$work/serve.log" >&2; fail "SIGTERM: exit status $rc"; }

dpkg -r strata
[ ! -e /usr/bin/strata ] || fail "/usr/bin/strata is still there after removal"
[ -e /etc/strata/strata.json ] || fail "removal took the configuration (only purge may)"
dpkg -P strata
[ ! -e /etc/strata/strata.json ] || fail "purge left the configuration"
! id strata >/dev/null 2>&1 || fail "purge left the user strata"
[ -d /var/lib/strata/data ] || fail "purge removed the streams' data"
echo "package test passed"
