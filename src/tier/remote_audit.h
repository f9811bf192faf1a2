// Remote audit: what a stream's persisted manifest says against what the
// bucket holds, as the uploader's and node's tests and `strata demo` want
// it. A view of a full scrub (scrub_run.h, rules in scrub.h): the catalog's
// root exists and decodes; the manifest walks from first to next offset
// with no gap and no overlap; every fragment and group it references
// exists; with verify_data, every fragment object is read whole and
// decoded (header, index, trailer, object CRC, every chunk header and data
// CRC) and must cover exactly its manifest entry. Objects under the
// stream's prefix that nothing references are listed as orphans (an old
// root within its delete grace, an upload a crash cut short).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "common/result.h"
#include "objstore/object_store.h"
#include "tier/manifest.h"
#include "tier/object_keys.h"

namespace strata::tier {

struct AuditProblem {
  // A scrub finding's name (scrub_finding.h), orphans excepted; an object
  // that could not be read counts too (`unreadable`): nothing is trusted
  // unverified.
  std::string kind;
  std::string key;
  std::string detail;
};

struct AuditOptions {
  // GET and decode every fragment object (else: the header and index of
  // each, by ranged GETs).
  bool verify_data = true;
};

struct AuditReport {
  std::string stream;
  bool in_catalog = false;
  uint64_t epoch = 0;
  uint64_t revision = 0;
  std::string root_key;
  Manifest manifest;
  uint64_t fragments = 0;
  uint64_t groups = 0;
  uint64_t fragment_bytes = 0;                // chunk bytes referenced
  std::vector<std::string> referenced;        // root, groups, fragments
  std::vector<objstore::ObjectInfo> orphans;  // listed, not referenced
  std::vector<AuditProblem> problems;         // damage
  bool damaged() const { return !problems.empty(); }
};

// Errors only when the audit itself cannot run (catalog or listing down);
// damage is reported in the report.
Result<AuditReport> audit_stream(objstore::ObjectStore& store, catalog::Catalog& catalog,
                                 const ObjectKeys& keys, const AuditOptions& opts = {});

}  // namespace strata::tier
