// Node: changing a live stream's retention (node.h, alter_stream). The new
// settings are stored before they apply, so a crash in between leaves the
// stream with the new settings at its next open, never running with
// settings it does not keep.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "node/node_impl.h"
#include "node/stream_settings_file.h"

namespace strata::node {

namespace {

std::string describe(const EffectiveSettings& e) {
  auto opt = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("none"); };
  std::string s = fmt::format("local max_bytes {}, max_age_ms {}", opt(e.local_retention.max_bytes),
                              opt(e.local_retention.max_age_ms));
  if (e.tiering) {
    s += fmt::format("; remote max_bytes {}, max_age_ms {}", opt(e.remote_retention.max_bytes),
                     opt(e.remote_retention.max_age_ms));
  }
  return s;
}

}  // namespace

Status Node::alter_stream(const std::string& name, const StreamSettings& to) {
  return impl_->alter(name, to, /*in_catalog=*/true);
}

Status Node::adopt_catalog_settings(const std::string& name, const StreamSettings& to) {
  return impl_->alter(name, to, /*in_catalog=*/false);
}

Status Node::alter_catalog_stream(const std::string& name, const StreamSettings& to) {
  Impl& n = *impl_;
  std::lock_guard alter(n.alter_mu);
  STRATA_ASSIGN_OR_RETURN(StreamSettings cur, catalog_stream_settings(name));
  STRATA_TRY(check_alteration(cur, to));
  STRATA_TRY(validate_settings(n.cfg, to));
  if (cur == to) return Status::OK();
  STRATA_TRY(n.catalog->update_settings(name, settings_to_json(to).dump()));
  spdlog::info("node: stream {}: retention altered in the catalog; its owner applies it",
               printable_stream(name));
  return Status::OK();
}

Status Node::Impl::alter(const std::string& name, const StreamSettings& to, bool in_catalog) {
  Impl& n = *this;
  std::lock_guard alter(n.alter_mu);
  STRATA_ASSIGN_OR_RETURN(StreamEntry e, n.lookup(name));
  STRATA_TRY(check_alteration(e.settings, to));
  STRATA_TRY(validate_settings(n.cfg, to));
  if (e.settings == to) return Status::OK();
  // A cluster's stream keeps its settings beside its catalog entry, read by
  // every owner that acquires it; the file beside the log is what local
  // tools and a node without such a catalog read. Adopted settings are in
  // the catalog already.
  if (in_catalog) {
    auto kept = n.catalog->settings(name);
    if (kept.ok() && *kept) {
      STRATA_TRY(n.catalog->update_settings(name, settings_to_json(to).dump()));
    } else if (!kept.ok() && kept.error().code != Errc::unsupported) {
      return std::move(kept).error().with_context(fmt::format("altering stream {}", name));
    }
  }
  STRATA_TRY(write_settings_file(n.registry->fs(), n.registry->dir_of(name), to));
  const EffectiveSettings eff = node::effective_settings(n.cfg, to);
  e.log->set_retention(eff.local_retention);
  if (e.uploader) e.uploader->set_retention(eff.remote_retention);
  {
    std::lock_guard l(n.mu);
    n.table.update_settings(name, e.log.get(), to, eff);
  }
  spdlog::info("node: stream {}: retention altered: {}", printable_stream(name), describe(eff));
  // At once rather than at the next roll or persist; a tiered log's hook
  // still vetoes what the bucket does not hold yet.
  if (eff.local_retention.any()) {
    auto r = e.log->apply_retention();
    if (!r.ok()) {
      spdlog::warn("node: stream {}: retention after an alteration: {}", printable_stream(name),
                   r.error().to_string());
    }
  }
  return Status::OK();
}

}  // namespace strata::node
