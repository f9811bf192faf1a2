#include "tier/remote_audit.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "tier/fragment_iterator.h"
#include "tier/fragment_object.h"
#include "tier/manifest_codec.h"

namespace strata::tier {

namespace {

void problem(AuditReport& r, std::string kind, std::string key, std::string detail) {
  r.problems.push_back(AuditProblem{std::move(kind), std::move(key), std::move(detail)});
}

void check_fragment(objstore::ObjectStore& store, const FragmentRef& ref, const std::string& key,
                    const objstore::ObjectInfo& info, const AuditOptions& opts, AuditReport& r) {
  // The smallest object a fragment of ref.size data bytes can be (one chunk).
  uint64_t min_size = fragment_object_size(ref.size, 1);
  if (info.size < min_size) {
    problem(r, "size_mismatch", key,
            fmt::format("object is {} bytes, a fragment of {} data bytes needs at least {}",
                        info.size, ref.size, min_size));
    return;
  }
  if (!opts.verify_data) return;
  auto body = store.get(key);
  if (!body.ok()) {
    problem(r, "corrupt_object", key, "reading it: " + body.error().to_string());
    return;
  }
  auto f = decode_fragment(*body, key, /*verify_chunks=*/true);
  if (!f.ok()) {
    problem(r, "corrupt_object", key, f.error().message);
    return;
  }
  const FragmentMeta& m = f->header.meta;
  if (m.first_offset != ref.offset || m.next_offset != ref.next_offset || m.size != ref.size) {
    problem(
        r, "range_mismatch", key,
        fmt::format("object holds [{}, {}) with {} data bytes; the manifest says [{}, {}) "
                    "with {}",
                    m.first_offset, m.next_offset, m.size, ref.offset, ref.next_offset, ref.size));
  }
}

}  // namespace

Result<AuditReport> audit_stream(objstore::ObjectStore& store, catalog::Catalog& catalog,
                                 const ObjectKeys& keys, const AuditOptions& opts) {
  AuditReport r;
  r.stream = keys.stream();
  auto listed = objstore::list_all(store, keys.stream_prefix());
  if (!listed.ok())
    return listed.error().to_error().with_context("listing " + keys.stream_prefix());
  std::map<std::string, objstore::ObjectInfo> objects;
  for (auto& o : *listed) objects.emplace(o.key, o);
  std::set<std::string> referenced;

  auto entry = catalog.get(keys.stream());
  if (!entry.ok() && entry.error().code != Errc::not_found) {
    return std::move(entry).error().with_context("reading the catalog entry of " + keys.stream());
  }
  if (entry.ok()) {
    r.in_catalog = true;
    r.epoch = entry->epoch;
    r.revision = entry->revision;
    r.root_key = entry->root_key;
  }
  if (!r.root_key.empty()) {
    referenced.insert(r.root_key);
    auto body = store.get(r.root_key);
    if (!body.ok()) {
      problem(
          r, "missing_root", r.root_key,
          fmt::format("catalog revision {} names it: {}", r.revision, body.error().to_string()));
    } else if (auto root = decode_root(*body, r.root_key); !root.ok()) {
      problem(r, "corrupt_root", r.root_key, root.error().message);
    } else if (Status v = validate_manifest(root->manifest, r.root_key); !v.ok()) {
      problem(r, "corrupt_root", r.root_key, v.error().message);
    } else {
      r.manifest = std::move(root->manifest);
      auto shared = std::make_shared<const Manifest>(r.manifest);
      GroupFetch fetch =
          [&](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
        std::string key = keys.for_entry(e);
        referenced.insert(key);
        r.groups += 1;
        auto g = store.get(key);
        if (!g.ok()) return g.error().to_error();
        STRATA_ASSIGN_OR_RETURN(ManifestGroup group, decode_group(*g, key));
        return std::make_shared<const ManifestGroup>(std::move(group));
      };
      FragmentIterator it(shared, r.manifest.first_offset, fetch);
      std::optional<uint64_t> prev_next;
      for (;;) {
        auto ref = it.next();
        if (!ref.ok()) {
          problem(r, "group_unreadable", "", ref.error().message);
          break;
        }
        if (!*ref) break;
        const FragmentRef& f = **ref;
        std::string key = keys.fragment(f.offset, f.epoch, f.uid);
        referenced.insert(key);
        r.fragments += 1;
        r.fragment_bytes += f.size;
        if (prev_next && f.offset > *prev_next) {
          problem(r, "gap", key,
                  fmt::format("offsets [{}, {}) are in no fragment", *prev_next, f.offset));
        } else if (prev_next && f.offset < *prev_next) {
          problem(r, "overlap", key,
                  fmt::format("starts at {} but the previous fragment ends at {}", f.offset,
                              *prev_next));
        }
        prev_next = f.next_offset;
        auto o = objects.find(key);
        if (o == objects.end()) {
          problem(r, "missing_object", key,
                  fmt::format("fragment [{}, {}) is referenced but not in the bucket", f.offset,
                              f.next_offset));
          continue;
        }
        check_fragment(store, f, key, o->second, opts, r);
      }
      if (prev_next && *prev_next != r.manifest.next_offset) {
        problem(r, "gap", r.root_key,
                fmt::format("the fragments end at {} but the manifest's next offset is {}",
                            *prev_next, r.manifest.next_offset));
      }
    }
  }
  for (auto& [key, info] : objects) {
    if (!referenced.count(key)) r.orphans.push_back(info);
  }
  r.referenced.assign(referenced.begin(), referenced.end());
  return r;
}

}  // namespace strata::tier
