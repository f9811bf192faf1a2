#!/usr/bin/env bash
# strata set-up: installs every build and test dependency from Debian's
# archive (and the npm registry for the test S3 server). Idempotent: packages
# already present are skipped, so a second run costs seconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Build toolchain and libraries.
packages=(
  build-essential g++ cmake ninja-build ccache pkg-config git ca-certificates
  # LLVM's linker: links the test executables several times faster.
  lld
  libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev libpugixml-dev libcli11-dev libfmt-dev libspdlog-dev
  nlohmann-json3-dev libasio-dev libssl-dev libcpp-httplib-dev
  # Peers measured in benchmarks.
  libsqlite3-dev librocksdb-dev
  # Real components started by the tests on 127.0.0.1: the S3 server and
  # the fault proxy (Node.js), Erlang (writes real DETS files), haproxy
  # (fault injection), awscli (an independent S3 client), botocore (the
  # SigV4 oracle).
  nodejs erlang-nox haproxy awscli python3 python3-botocore
  # The Erlang binding (erlang/): erl_nif.h to build its NIF, common_test
  # (ct_run) to run its suites.
  erlang-dev erlang-common-test
  # The curl CLI, the peer of the object-store benchmark.
  curl
  # Codecs of compressed sub-batches (log/sub_batch_codec.h); the gzip, zstd
  # and lz4 programs compress independently in its tests.
  zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev gzip zstd lz4
  # xxHash: the hash of the Bloom filter each chunk keeps of its messages'
  # filter values (log/chunk_filter.h).
  libxxhash-dev
  # ISA-L: zlib-compatible CRC32 (the stream protocol's chunk checksum) at
  # several times zlib's speed.
  libisal-dev
  # PCRE2: the permission regexes of auth/access.h, matched as RabbitMQ's
  # Erlang `re` (itself PCRE) matches them.
  libpcre2-dev
  # RabbitMQ 3.10 with its stream plugin: the peer `strata perf` is compared
  # against (bench/server/); its rabbitmqadmin drives the management API in
  # tests/server/rabbitmqadmin_test.cpp.
  rabbitmq-server
  # etcd 3.4: the coordination service of the etcd catalog backend (tests
  # start 3-member clusters on 127.0.0.1; etcdctl for operators).
  etcd-server etcd-client
  # The openssl program: tests make their TLS certificates with it.
  openssl
  # flock(1), the independent lock holder of tests/common/file_lock_test.cpp.
  util-linux
  # A real browser for the web console's test (driven by playwright-core
  # from tools/package.json).
  chromium
  # promtool, Prometheus's own checker of a /metrics page (the metrics docs
  # test runs it on live nodes).
  prometheus
  # The Debian package (scripts/package.sh, docs/PACKAGE.md): CPack's DEB
  # generator lists the binary's libraries with dpkg-shlibdeps; its test
  # checks the unit with systemd-analyze and installs with adduser.
  dpkg-dev systemd adduser
  # Kernel TLS, run for real (tests/vm/ktls_vm_test.sh): QEMU boots Debian's
  # cloud kernel (below) from an initramfs of busybox, the kernel's modules
  # (indexed by depmod) and strata, packed by cpio.
  qemu-system-x86 busybox-static cpio kmod
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm ships inside nodesource's nodejs; Debian packages it separately.
if ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  log="$(mktemp /tmp/strata-setup-XXXXXX.log)"
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "setup: apt-get failed; full log in $log" >&2
    exit 1
  fi
else
  echo "setup: all Debian packages present"
fi

# Debian's cloud kernel, which has the `tls` module the test machines'
# kernels lack, for tests/vm/ktls_vm_test.sh: downloaded, never installed.
vm_dir="${STRATA_VM_DIR:-$HOME/.cache/strata/vm}"
if ! ls "$vm_dir"/linux-image-*-cloud-amd64_*.deb >/dev/null 2>&1; then
  kernel_package() {
    apt-cache depends linux-image-cloud-amd64 2>/dev/null |
      awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
  }
  kernel_pkg="$(kernel_package)"
  if [ -z "$kernel_pkg" ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    kernel_pkg="$(kernel_package)"
  fi
  if [ -z "$kernel_pkg" ]; then
    echo "setup: no linux-image-cloud-amd64 in the package lists (apt-get update?)" >&2
    exit 1
  fi
  echo "setup: downloading $kernel_pkg into $vm_dir"
  mkdir -p "$vm_dir"
  if ! (cd "$vm_dir" && apt-get download -qq "$kernel_pkg" 2>/dev/null); then
    echo "setup: apt-get download $kernel_pkg failed" >&2
    exit 1
  fi
else
  echo "setup: VM kernel present"
fi

# The test S3 server (s3rver), the RabbitMQ Stream JavaScript client and
# playwright-core (drives chromium), pinned by tools/package-lock.json.
if [ -f "$here/tools/package.json" ]; then
  if [ ! -d "$here/tools/node_modules/s3rver" ] ||
    [ ! -d "$here/tools/node_modules/rabbitmq-stream-js-client" ] ||
    [ ! -d "$here/tools/node_modules/playwright-core" ]; then
    echo "setup: npm ci in tools/"
    (cd "$here/tools" && npm ci --no-audit --no-fund --loglevel=error)
  else
    echo "setup: npm packages present"
  fi
fi
