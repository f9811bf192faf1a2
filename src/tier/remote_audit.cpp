#include "tier/remote_audit.h"

#include "tier/scrub_run.h"

namespace strata::tier {

Result<AuditReport> audit_stream(objstore::ObjectStore& store, catalog::Catalog& catalog,
                                 const ObjectKeys& keys, const AuditOptions& opts) {
  ScrubOptions so;
  so.full = opts.verify_data;
  so.sample = 0;
  STRATA_ASSIGN_OR_RETURN(ScrubReport s,
                          scrub_stream(store, CatalogSource::live(catalog), keys, so));
  AuditReport r;
  r.stream = s.stream;
  r.in_catalog = s.in_catalog;
  r.epoch = s.epoch;
  r.revision = s.revision;
  r.root_key = s.root_key;
  r.manifest = std::move(s.manifest);
  r.fragments = s.fragments;
  r.groups = s.groups;
  r.fragment_bytes = s.fragment_bytes;
  r.referenced = std::move(s.referenced);
  for (auto& f : s.findings) {
    if (f.kind == FindingKind::orphan) {
      objstore::ObjectInfo o;
      o.key = std::move(f.key);
      o.size = f.size.value_or(0);
      r.orphans.push_back(std::move(o));
    } else {
      r.problems.push_back(
          AuditProblem{std::string(finding_name(f.kind)), std::move(f.key), std::move(f.detail)});
    }
  }
  return r;
}

}  // namespace strata::tier
