#include "tier/upload_jobs.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/mapped_range.h"
#include "log/chunk.h"
#include "log/log_files.h"
#include "tier/fragment_object.h"
#include "tier/manifest_codec.h"

namespace strata::tier {

namespace {

TransferFailure local_failure(Errc code, std::string message) {
  // A local problem (segment bytes that fail their CRC, a segment that
  // cannot be mapped) is not the object store's: retrying fast would not
  // help, so it is fatal — the pipeline stalls and says why.
  (void)code;
  return TransferFailure{objstore::RetryClass::fatal, 0, "", std::move(message)};
}

}  // namespace

// ---- start ----

Result<LoadedState> load_stream_state(catalog::Catalog& catalog, objstore::ObjectStore& store,
                                      const ManifestCache& cache, const ObjectKeys& keys,
                                      bool take_over) {
  const std::string& stream = keys.stream();
  LoadedState out;
  auto got = catalog.get(stream);
  if (!got.ok() && got.error().code == Errc::not_found) {
    auto created = catalog.create(stream, 1);
    if (created.ok()) {
      out.created = true;
      got = std::move(created);
    } else if (created.error().code == Errc::already_exists) {
      got = catalog.get(stream);
    } else {
      return std::move(created).error().with_context("creating the catalog entry of " + stream);
    }
  }
  if (!got.ok())
    return std::move(got).error().with_context("reading the catalog entry of " + stream);
  out.entry = std::move(got).value();
  const uint64_t loaded_revision = out.entry.revision;

  if (take_over) {
    STRATA_ASSIGN_OR_RETURN(catalog::PutResult r,
                            catalog.bump_epoch(stream, out.entry.revision, out.entry.epoch + 1));
    if (r.outcome != catalog::PutOutcome::ok) {
      return Error(Errc::conflict,
                   fmt::format("taking over stream {}: the catalog entry changed during the "
                               "take-over (revision {} -> {}); retrying",
                               stream, out.entry.revision, r.revision));
    }
    out.entry.epoch = r.epoch;
    out.entry.revision = r.revision;
  }

  if (out.entry.root_key.empty()) {
    out.manifest = Manifest::empty_at(0);
    return out;
  }
  out.has_root = true;
  if (auto c = cache.get(stream); c.ok() && c->revision == loaded_revision && c->manifest) {
    out.manifest = *c->manifest;
    out.from_cache = true;
    return out;
  }
  STRATA_ASSIGN_OR_RETURN(out.manifest, read_persisted_manifest(store, out.entry));
  return out;
}

Result<Manifest> read_persisted_manifest(objstore::ObjectStore& store,
                                         const catalog::StreamEntry& entry) {
  if (entry.root_key.empty()) return Manifest::empty_at(0);
  auto body = store.get(entry.root_key);
  if (!body.ok()) {
    const auto& e = body.error();
    if (e.retry == objstore::RetryClass::not_found) {
      // The catalog points at it, so it existed when persisted: a listing
      // lag, a restore in progress or an operator's mistake. Never "empty".
      return Error(Errc::transient,
                   fmt::format("stream {}: manifest root {} named by catalog revision {} is "
                               "missing from the object store; retrying (it is never read as an "
                               "empty manifest)",
                               entry.stream, entry.root_key, entry.revision));
    }
    return Error(e.retry == objstore::RetryClass::transient ? Errc::transient : Errc::fatal,
                 fmt::format("stream {}: reading manifest root: {}", entry.stream, e.to_string()));
  }
  STRATA_ASSIGN_OR_RETURN(DecodedRoot root, decode_root(*body, entry.root_key));
  STRATA_TRY(validate_manifest(root.manifest, entry.root_key));
  return std::move(root.manifest);
}

Result<CachedManifest> load_persisted_manifest(catalog::Catalog& catalog,
                                               objstore::ObjectStore& store,
                                               std::string_view stream) {
  auto got = catalog.get(stream);
  if (!got.ok()) {
    return std::move(got).error().with_context("reading the catalog entry of " +
                                               std::string(stream));
  }
  STRATA_ASSIGN_OR_RETURN(Manifest m, read_persisted_manifest(store, *got));
  return CachedManifest{std::make_shared<const Manifest>(std::move(m)), got->epoch, got->revision};
}

// ---- fragments ----

Result<uint64_t, TransferFailure> put_fragment(objstore::ObjectStore& store, log::StreamLog& log,
                                               const FragmentPlan& plan, uint64_t epoch,
                                               const std::string& key) {
  auto enc = FragmentEncoder::make(plan.meta, plan.index, epoch, /*verify_chunks=*/true);
  if (!enc.ok()) {
    return local_failure(enc.error().code,
                         fmt::format("building fragment {}: {}", key, enc.error().message));
  }
  std::vector<MappedRange> maps;
  maps.reserve(plan.spans.size());
  std::vector<BytesView> parts;
  parts.reserve(plan.spans.size() + 2);
  parts.push_back(enc->header());
  for (const SegmentSpan& span : plan.spans) {
    auto m = log.map_committed(span.segment, span.start, span.size());
    if (!m.ok()) {
      return local_failure(m.error().code, fmt::format("fragment {}: reading segment span: {}", key,
                                                       m.error().message));
    }
    // Verified in pieces, each dropped from the RSS once read (the pages
    // stay cached for the upload's pass).
    const BytesView v = m->view();
    Status s = objstore::for_each_body_piece(
        objstore::BodyParts(&v, 1), [&](BytesView piece) { return enc->add_body(piece); },
        [&m](uint64_t done) { m->drop_before(done); });
    if (!s.ok()) {
      return local_failure(s.code(), fmt::format("fragment {} from {}/{} [{}, {}): {}", key,
                                                 log.dir(), log::segment_file_name(span.segment),
                                                 span.start, span.end, s.error().message));
    }
    parts.push_back(v);
    maps.push_back(std::move(m).value());
  }
  auto tail = enc->finish();
  if (!tail.ok()) {
    return local_failure(tail.error().code,
                         fmt::format("finishing fragment {}: {}", key, tail.error().message));
  }
  parts.push_back(*tail);
  // The trailer ends with the CRC32C of every byte before it, so the whole
  // body's CRC32C is that value extended over its own four bytes: no second
  // pass over the data.
  const uint8_t* end = reinterpret_cast<const uint8_t*>(tail->data()) + tail->size();
  uint32_t object_crc = get_be32(end - 4);
  objstore::PutOptions po;
  po.crc32c = crc32c::extend(object_crc, end - 4, 4);
  // Each pass of the store over the body drops the mapped pages behind it:
  // the server's RSS holds a window of the fragment, not the whole of it.
  // parts[1 + i] is maps[i], starting at starts[i] in the body.
  std::vector<uint64_t> starts;
  starts.reserve(maps.size());
  uint64_t at = parts.front().size();
  for (const MappedRange& m : maps) {
    starts.push_back(at);
    at += m.view().size();
  }
  // The first map not wholly dropped in this pass (a pass begins with 0).
  po.on_progress = [&maps, &starts, next = size_t(0)](uint64_t done) mutable {
    if (done == 0) next = 0;
    for (; next < maps.size() && starts[next] < done; ++next) {
      maps[next].drop_before(done - starts[next]);
      if (starts[next] + maps[next].view().size() > done) break;
    }
  };
  auto put = store.put(key, objstore::BodyParts(parts.data(), parts.size()), po);
  if (!put.ok()) return TransferFailure::from(put.error());
  return enc->object_size();
}

Result<uint64_t, TransferFailure> put_group(objstore::ObjectStore& store, const ManifestGroup& g,
                                            const std::string& key) {
  Bytes body = encode_group(g);
  auto put = store.put(key, body);
  if (!put.ok()) return TransferFailure::from(put.error());
  return uint64_t(body.size());
}

// ---- persist ----

PersistDone persist_root(objstore::ObjectStore& store, catalog::Catalog& catalog,
                         const std::string& stream, const Manifest& m, uint64_t epoch,
                         const std::string& root_key, uint64_t expected_revision) {
  PersistDone d;
  Bytes body = encode_root(m, epoch);
  auto put = store.put(root_key, body);
  if (!put.ok()) {
    d.message = "PUT of the manifest root: " + put.error().to_string();
    return d;
  }
  auto r = catalog.put(stream, root_key, epoch, expected_revision);
  if (!r.ok()) {
    // Unknown whether the CAS committed: the root may be referenced, keep it.
    d.message = "catalog compare-and-set: " + r.error().to_string();
    return d;
  }
  switch (r->outcome) {
    case catalog::PutOutcome::ok:
      d.ok = true;
      d.revision = r->revision;
      return d;
    case catalog::PutOutcome::conflict:
      d.error = upload::PersistError::conflict;
      d.message =
          fmt::format("catalog revision is {} (expected {})", r->revision, expected_revision);
      break;
    case catalog::PutOutcome::fenced:
      d.error = upload::PersistError::conflict;
      d.fenced = true;
      d.message = fmt::format("fenced: the catalog holds epoch {} (ours is {})", r->epoch, epoch);
      break;
    case catalog::PutOutcome::not_found:
      d.error = upload::PersistError::not_found;
      d.message = "the stream has no catalog entry";
      break;
  }
  // Refused: nothing references the new root.
  (void)store.remove(root_key);
  return d;
}

// ---- retention ----

Result<RetentionPlan> evaluate_retention_plan(objstore::ObjectStore& store, const ObjectKeys& keys,
                                              const Manifest& m, const RetentionSpec& spec,
                                              int64_t now_ms) {
  GroupFetch fetch = [&](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
    std::string key = keys.for_entry(e);
    auto body = store.get(key);
    if (!body.ok()) return body.error().to_error();
    STRATA_ASSIGN_OR_RETURN(ManifestGroup g, decode_group(*body, key));
    return std::make_shared<const ManifestGroup>(std::move(g));
  };
  return plan_retention(m, spec, now_ms, fetch);
}

// ---- deletes ----

DeleteDone delete_objects(objstore::ObjectStore& store, const std::vector<std::string>& keys) {
  DeleteDone d;
  if (keys.empty()) return d;
  for (const auto& o : store.remove_many(keys)) {
    if (o.ok()) {
      d.deleted += 1;
    } else {
      d.failures.push_back(o.key + ": " + o.error->to_string());
    }
  }
  return d;
}

}  // namespace strata::tier
