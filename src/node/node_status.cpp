// The node's /status (JSON) and /metrics (Prometheus text).
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "common/stream_name.h"
#include "node/node_impl.h"
#include "objstore/metered_store.h"

namespace strata::node {

using json = nlohmann::json;

// The replica copies open here (Node::open_copy): what each holds.
json Node::Impl::copies_json() const {
  std::map<std::string, std::shared_ptr<log::StreamLog>> open;
  {
    std::lock_guard l(mu);
    open = copies;
  }
  json out = json::object();
  for (const auto& [name, log] : open) {
    if (log->closed()) continue;
    const log::LocalRange r = log->local_range();
    out[name] = {{"local_first_offset", r.first_offset},
                 {"local_next_offset", r.next_offset},
                 {"last_epoch", log->last_chunk_epoch()}};
  }
  return out;
}

namespace {

json histogram_json(const LatencyHistogram::Snapshot& s) {
  return {{"count", s.count},
          {"p50_ms", s.quantile_ms(0.5)},
          {"p99_ms", s.quantile_ms(0.99)},
          {"max_ms", double(s.max_us) / 1000.0}};
}

// What a takeover or the loss of the node's disk would lose now under
// confirm = local: committed offsets no persisted manifest covers yet. The
// bytes count what the uploader has read of them (cut or not); chunks it
// has not read yet (a catch-up backlog) count in the offsets only.
uint64_t unpersisted_tail_offsets(const tier::UploaderStatus& u) {
  return u.local_next_offset > u.remote_next_offset ? u.local_next_offset - u.remote_next_offset
                                                    : 0;
}
uint64_t unpersisted_tail_bytes(const tier::UploaderStatus& u) {
  if (unpersisted_tail_offsets(u) == 0) return 0;
  return u.assembly_bytes + u.core.bytes_in_transfer + u.core.bytes_unpersisted;
}

json uploader_json(const tier::UploaderStatus& u, int64_t now_ms) {
  json j = {
      {"unpersisted_tail_offsets", unpersisted_tail_offsets(u)},
      {"unpersisted_tail_bytes", unpersisted_tail_bytes(u)},
      {"state", tier::uploader_state_name(u.state)},
      {"consecutive_failures", u.consecutive_failures},
      {"epoch", u.epoch},
      {"revision", u.revision},
      {"root_key", u.root_key},
      {"remote_first_offset", u.remote_first_offset},
      {"remote_next_offset", u.remote_next_offset},
      {"remote_bytes", u.remote_bytes},
      {"local_first_offset", u.local_first_offset},
      {"local_next_offset", u.local_next_offset},
      {"fragments_uploaded", u.fragments_uploaded},
      {"bytes_uploaded", u.bytes_uploaded},
      {"transfers_in_flight", u.core.transfers_in_flight},
      {"bytes_in_transfer", u.core.bytes_in_transfer},
      {"fragments_pending_persist", u.core.fragments_unpersisted},
      {"bytes_pending_persist", u.core.bytes_unpersisted},
      {"pending_cut_bytes", u.assembly_bytes},
      {"upload_stalled_offset",
       u.core.upload_stalled_offset ? json(*u.core.upload_stalled_offset) : json(nullptr)},
      {"seconds_since_last_persist",
       u.last_persist_ms < 0 ? json(nullptr) : json(double(now_ms - u.last_persist_ms) / 1000.0)},
      {"persists", u.core.persists_completed},
      {"retries", {{"transient", u.retries_transient}, {"fatal", u.retries_fatal}}},
      {"failures_by_class", u.failures_by_class},
      {"deadlines", u.deadlines},
      {"gaps", u.gaps},
      {"remote_ahead", u.remote_ahead},
      {"local_segments_deleted", u.local_segments_deleted},
      {"objects_deleted", u.objects_deleted},
      {"catching_up", u.catching_up},
      {"time_to_remote", histogram_json(u.time_to_remote)},
      {"last_error", u.last_error},
  };
  return j;
}

uint64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * uint64_t(::sysconf(_SC_PAGESIZE));
}

uint64_t thread_count() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoull(line.substr(8));
  }
  return 0;
}

json deletion_json(const std::string& state, int64_t requested_at_ms, uint64_t runs,
                   const DeletionProgress& p, const std::string& last_error) {
  return {{"state", state},
          {"requested_at_ms", requested_at_ms},
          {"runs", runs},
          {"step", deletion_step_name(p.step)},
          {"objects_removed", p.objects_removed},
          {"listings", p.listings},
          {"transient_failures", p.transient_failures},
          {"last_error", last_error}};
}

// The node's own cleanup of unreferenced objects (orphan_sweep.h).
json orphans_json(const OrphanSweepStats& s, int64_t grace_ms) {
  return {{"grace_ms", grace_ms},
          {"runs", s.runs},
          {"failed_runs", s.failed_runs},
          {"deleted", s.deleted},
          {"deleted_bytes", s.deleted_bytes},
          {"delete_failures", s.delete_failures},
          {"left", s.left},
          {"last_run_ms", s.last_run_ms == 0 ? json(nullptr) : json(s.last_run_ms)},
          {"last_error", s.last_error}};
}

// Per operation requested at least once: requests, errors by retry class
// and body bytes (the same counts as the strata_objstore_* metrics).
json objstore_requests_json(objstore::ObjectStore* store) {
  json j = json::object();
  auto* m = dynamic_cast<objstore::MeteredStore*>(store);
  if (!m) return j;
  for (auto op :
       {objstore::Op::put, objstore::Op::get, objstore::Op::get_range, objstore::Op::head,
        objstore::Op::remove, objstore::Op::remove_many, objstore::Op::list, objstore::Op::check}) {
    auto s = m->stats(op);
    if (s.requests == 0) continue;
    j[std::string(objstore::op_name(op))] = {{"requests", s.requests},
                                             {"transient_errors", s.transient_errors},
                                             {"fatal_errors", s.fatal_errors},
                                             {"not_found", s.not_found},
                                             {"bytes", s.bytes}};
  }
  return j;
}

}  // namespace

json Node::Impl::deletions_json() const {
  std::lock_guard l(mu);
  json out = json::object();
  for (const auto& [name, d] : deletions) {
    std::string state;
    DeletionProgress p = d.progress;
    std::string err = d.last_error;
    if (!d.blocked.empty()) {
      state = "blocked";
      err = d.blocked;
    } else if (d.attempt && d.attempt->run) {
      state = "running";
      p = d.attempt->run->progress();
      if (!p.last_error.empty()) err = p.last_error;
    } else if (d.attempt) {
      state = "stopping_writer";
    } else if (std::find(deletion_queue.begin(), deletion_queue.end(), name) !=
               deletion_queue.end()) {
      state = "queued";
    } else {
      state = "failed";
    }
    out[name] = deletion_json(state, d.requested_at_ms, d.runs, p, err);
  }
  return out;
}

Node::ProcessFigures Node::Impl::process_figures() const {
  return {rss_bytes(), system_clock().now_ms() - started_ms};
}

json Node::Impl::status_json() const {
  int64_t now = system_clock().now_ms();
  std::map<std::string, StreamEntry> streams;
  {
    std::lock_guard l(mu);
    streams = table.open_entries();
  }
  json js = json::object();
  for (const auto& [name, e] : streams) {
    log::LocalRange r = e.log->local_range();
    json s = {{"local_first_offset", r.first_offset}, {"local_next_offset", r.next_offset}};
    uint64_t local_bytes = 0;
    for (const auto& seg : e.log->segments()) local_bytes += seg.size_bytes;
    s["local_bytes"] = local_bytes;
    const Status health = e.log->health();
    s["writer"] = health.ok() ? json{{"state", "running"}}
                              : json{{"state", "failed"}, {"error", health.error().to_string()}};
    s["writer"]["restarts"] = e.log->writer_restarts();
    if (e.effective.tiering) {
      const auto reads = reads_of(name);
      s["remote_reads"] = {{"chunks", reads->chunks.load()}, {"bytes", reads->bytes.load()}};
    }
    // What the stream was created with (its stream arguments) and what it
    // runs with (those over the node's configuration).
    s["settings"] = settings_to_json(e.settings);
    s["effective"] = effective_to_json(e.effective);
    if (e.uploader) s["tiering"] = uploader_json(e.uploader->status(), now);
    js[name] = s;
  }
  auto g = governor ? governor->stats() : tier::GovernorStats{};
  auto p = runtime ? runtime->pool_stats() : BlockingPoolStats{};
  auto c = cache ? cache->stats() : tier::ManifestCacheStats{};
  auto gc = cache ? cache->groups().stats() : tier::GroupCacheStats{};
  const auto space = disk_space(cfg.data_dir);
  const DiskWatchSnapshot dw = disk ? disk->snapshot() : DiskWatchSnapshot{};
  json stopped = json::array();
  for (const auto& w : dw.stopped) {
    stopped.push_back({{"stream", w.stream},
                       {"failed_restarts", w.failed_restarts},
                       {"restarting", w.restarting},
                       {"last_error", w.last_error}});
  }
  return {
      {"node",
       {{"data_dir", cfg.data_dir},
        {"object_store", store ? store->describe() : ""},
        {"catalog", catalog ? catalog->describe() : ""},
        {"uptime_s", double(now - started_ms) / 1000.0},
        {"local_resets", local_resets.load()},
        {"takeover_dropped_offsets", takeover_dropped.load()},
        {"takeover_kept_offsets", takeover_kept.load()},
        {"threads", thread_count()},
        {"rss_bytes", rss_bytes()},
        {"disk",
         {{"free_bytes", space ? json(space->free_bytes) : json(nullptr)},
          {"size_bytes", space ? json(space->size_bytes) : json(nullptr)},
          {"free_limit_bytes", cfg.disk_free_limit_bytes},
          {"alarm", dw.alarm},
          {"alarms_raised", dw.alarms_raised},
          {"writer_restarts", dw.restarts},
          {"failed_writer_restarts", dw.failed_restarts},
          {"stopped_writers", stopped}}},
        {"orphans",
         orphans ? orphans_json(orphans->stats(), cfg.tiering.orphan_grace_ms) : json(nullptr)},
        {"object_store_requests", objstore_requests_json(store.get())},
        {"governor",
         {{"queued", g.queued},
          {"queued_bytes", g.queued_bytes},
          {"in_flight", g.in_flight},
          {"granted", g.granted},
          {"granted_bytes", g.granted_bytes},
          {"throttle_waits", g.throttle_waits},
          {"unlimited", g.unlimited}}},
        {"pool",
         {{"threads", p.threads},
          {"busy", p.busy},
          {"queued", p.queued},
          {"abandoned", p.abandoned}}},
        {"manifest_cache",
         {{"streams", c.streams},
          {"stale", c.stale},
          {"group_cache",
           {{"bytes", gc.bytes},
            {"capacity_bytes", gc.capacity_bytes},
            {"entries", gc.entries},
            {"hits", gc.hits},
            {"misses", gc.misses},
            {"evictions", gc.evictions}}}}}}},
      {"streams", js},
      {"copies", copies_json()},
      {"deletions", deletions_json()},
  };
}

namespace {

// One tiered stream's uploader: its remote range, its queue, its failures.
void write_uploader_metrics(PromWriter& w, const Labels& l, const tier::UploaderStatus& u,
                            int64_t now) {
  w.gauge("strata_tier_remote_first_offset", "First offset of the persisted remote range.", l,
          double(u.remote_first_offset));
  w.gauge("strata_tier_remote_next_offset", "Next offset of the persisted remote range.", l,
          double(u.remote_next_offset));
  w.gauge("strata_tier_remote_bytes", "Chunk bytes in the persisted remote range.", l,
          double(u.remote_bytes));
  w.gauge("strata_tier_unpersisted_tail_offsets",
          "Committed offsets not yet in a persisted manifest (lost with the disk under "
          "confirm=local).",
          l, double(unpersisted_tail_offsets(u)));
  w.gauge("strata_tier_unpersisted_tail_bytes",
          "Bytes of the unpersisted tail read by the uploader (cut or not).", l,
          double(unpersisted_tail_bytes(u)));
  w.counter("strata_tier_fragments_uploaded_total", "Fragment objects uploaded.", l,
            double(u.fragments_uploaded));
  w.counter("strata_tier_bytes_uploaded_total", "Fragment object bytes uploaded.", l,
            double(u.bytes_uploaded));
  w.gauge("strata_tier_transfers_in_flight", "Fragment uploads running or queued.", l,
          double(u.core.transfers_in_flight));
  w.gauge("strata_tier_fragments_pending_persist",
          "Fragments applied to the live manifest but not yet persisted.", l,
          double(u.core.fragments_unpersisted));
  w.gauge("strata_tier_upload_stalled_offset",
          "First offset of a fragment stuck on a fatal error (-1: none).", l,
          u.core.upload_stalled_offset ? double(*u.core.upload_stalled_offset) : -1.0);
  w.gauge("strata_tier_seconds_since_last_persist", "Seconds since the last persist (-1: none).", l,
          u.last_persist_ms < 0 ? -1.0 : double(now - u.last_persist_ms) / 1000.0);
  w.counter("strata_tier_persists_total", "Manifest persists committed.", l,
            double(u.core.persists_completed));
  for (const auto& [cls, n] : u.failures_by_class) {
    Labels lc = l;
    lc.emplace_back("class", cls);
    w.counter("strata_tier_failures_total", "Failures by class.", lc, double(n));
  }
  Labels lt = l, lf = l;
  lt.emplace_back("class", "transient");
  lf.emplace_back("class", "fatal");
  w.counter("strata_tier_retries_total", "Transfer retries by class.", lt,
            double(u.retries_transient));
  w.counter("strata_tier_retries_total", "Transfer retries by class.", lf, double(u.retries_fatal));
  w.counter("strata_tier_gaps_total", "Starts that found offsets in neither tier.", l,
            double(u.gaps));
  w.counter("strata_tier_remote_ahead_total",
            "Starts that found the remote tier ahead of the local log.", l, double(u.remote_ahead));
  w.counter("strata_tier_local_segments_deleted_total",
            "Local segments deleted once the remote tier covered them.", l,
            double(u.local_segments_deleted));
  w.gauge("strata_tier_up",
          "1 while the uploader runs and its last request to the object store and catalog "
          "succeeded.",
          l, u.state == tier::UploaderState::running && u.consecutive_failures == 0 ? 1.0 : 0.0);
  w.gauge("strata_tier_consecutive_failures",
          "Failed requests since the uploader's last successful one.", l,
          double(u.consecutive_failures));
  w.histogram("strata_tier_time_to_remote_seconds",
              "Time from a fragment's first chunk to the persist that covers it.", l,
              u.time_to_remote);
}

// The node's request paths shared by every stream: the governor, the group
// cache, the blocking pool.
void write_shared_metrics(PromWriter& w, tier::Governor* governor, tier::ManifestCache* cache,
                          Runtime* runtime) {
  if (governor) {
    auto g = governor->stats();
    w.gauge("strata_governor_queued", "Transfers waiting for the governor.", {}, double(g.queued));
    w.gauge("strata_governor_in_flight", "Transfers holding a governor permit.", {},
            double(g.in_flight));
    w.counter("strata_governor_granted_bytes_total", "Bytes admitted by the governor.", {},
              double(g.granted_bytes));
    w.counter("strata_governor_throttle_waits_total", "Times the head transfer waited for tokens.",
              {}, double(g.throttle_waits));
  }
  if (cache) {
    auto gc = cache->groups().stats();
    w.gauge("strata_group_cache_bytes", "Bytes of group objects cached for readers.", {},
            double(gc.bytes));
    w.counter("strata_group_cache_hits_total", "Group reads answered from the cache.", {},
              double(gc.hits));
    w.counter("strata_group_cache_misses_total", "Group reads that went to the object store.", {},
              double(gc.misses));
  }
  if (runtime) {
    auto p = runtime->pool_stats();
    w.gauge("strata_pool_threads", "Blocking pool threads.", {}, double(p.threads));
    w.gauge("strata_pool_abandoned", "Jobs past their deadline still running.", {},
            double(p.abandoned));
  }
}

// Object store requests by operation, when the store is metered.
void write_objstore_metrics(PromWriter& w, objstore::ObjectStore* store) {
  if (auto* m = dynamic_cast<objstore::MeteredStore*>(store)) {
    for (auto op : {objstore::Op::put, objstore::Op::get, objstore::Op::get_range,
                    objstore::Op::head, objstore::Op::remove, objstore::Op::remove_many,
                    objstore::Op::list, objstore::Op::check}) {
      auto s = m->stats(op);
      if (s.requests == 0) continue;
      Labels l = {{"op", std::string(objstore::op_name(op))}};
      w.counter("strata_objstore_requests_total", "Object store requests.", l, double(s.requests));
      Labels lt = l, lf = l, ln = l;
      lt.emplace_back("class", "transient");
      lf.emplace_back("class", "fatal");
      ln.emplace_back("class", "not_found");
      w.counter("strata_objstore_errors_total", "Object store errors by retry class.", lt,
                double(s.transient_errors));
      w.counter("strata_objstore_errors_total", "Object store errors by retry class.", lf,
                double(s.fatal_errors));
      w.counter("strata_objstore_errors_total", "Object store errors by retry class.", ln,
                double(s.not_found));
      w.counter("strata_objstore_bytes_total", "Body bytes sent or received.", l, double(s.bytes));
      w.histogram("strata_objstore_request_seconds", "Object store request latency.", l, s.latency);
    }
  }
}

}  // namespace

std::string Node::Impl::metrics_text() const {
  int64_t now = system_clock().now_ms();
  PromWriter w;
  std::map<std::string, StreamEntry> streams;
  {
    std::lock_guard l(mu);
    streams = table.open_entries();
  }
  for (const auto& [name, e] : streams) {
    Labels l = stream_labels(name);
    log::LocalRange r = e.log->local_range();
    w.gauge("strata_log_first_offset", "Oldest offset on local disk.", l, double(r.first_offset));
    w.gauge("strata_log_next_offset", "Committed next offset.", l, double(r.next_offset));
    uint64_t bytes = 0;
    for (const auto& seg : e.log->segments()) bytes += seg.size_bytes;
    w.gauge("strata_log_bytes", "Segment bytes of the stream on local disk.", l, double(bytes));
    w.gauge("strata_log_writer_up",
            "1 while the stream's writer accepts appends; 0 once an I/O failure stopped it "
            "(until the node restarts it).",
            l, e.log->health().ok() ? 1 : 0);
    w.counter("strata_log_writer_restarts_total",
              "Times the stream's writer was brought back after a fail-stop.", l,
              double(e.log->writer_restarts()));
    if (e.uploader) write_uploader_metrics(w, l, e.uploader->status(), now);
    if (e.effective.tiering) {
      const auto reads = reads_of(name);
      w.counter("strata_tier_remote_read_chunks_total",
                "Chunks readers of the stream read from the object store.", l,
                double(reads->chunks.load()));
      w.counter("strata_tier_remote_read_bytes_total",
                "Chunk bytes readers of the stream read from the object store.", l,
                double(reads->bytes.load()));
    }
  }
  write_shared_metrics(w, governor.get(), cache.get(), runtime.get());
  write_objstore_metrics(w, store.get());
  w.counter("strata_node_takeover_dropped_offsets_total",
            "Offsets this node wrote and never uploaded, dropped when it took a stream over "
            "after another owner had held it (the messages a takeover lost).",
            {}, double(takeover_dropped.load()));
  w.counter("strata_node_takeover_kept_offsets_total",
            "Unuploaded offsets kept when this node took back a stream no one owned since.", {},
            double(takeover_kept.load()));
  w.gauge("strata_node_deletions_pending",
          "Stream deletions requested and not finished (running, queued, failed or blocked).", {},
          double(pending_deletions().size()));
  // The file system holding the data directory: what an operator alerts on
  // before the log's writes fail for want of space.
  if (const auto space = disk_space(cfg.data_dir)) {
    w.gauge("strata_node_disk_free_bytes",
            "Bytes available to the node on the file system of its data directory.", {},
            double(space->free_bytes));
    w.gauge("strata_node_disk_size_bytes", "Size of the file system of the data directory.", {},
            double(space->size_bytes));
  }
  const DiskWatchSnapshot dw = disk ? disk->snapshot() : DiskWatchSnapshot{};
  w.gauge("strata_node_disk_free_limit_bytes",
          "Below this many free bytes the disk alarm refuses publishing (disk.free_limit_bytes).",
          {}, double(cfg.disk_free_limit_bytes));
  w.gauge("strata_node_disk_alarm", "1 while the disk alarm refuses publishing.", {},
          dw.alarm ? 1 : 0);
  w.counter("strata_node_disk_alarms_total", "Times the disk alarm was raised.", {},
            double(dw.alarms_raised));
  if (orphans) {
    const OrphanSweepStats o = orphans->stats();
    w.counter("strata_node_orphan_sweeps_total",
              "Runs of the node's cleanup of objects no manifest references.", {}, double(o.runs));
    w.counter("strata_node_orphan_sweep_failures_total",
              "Cleanup runs that could not list the bucket or read the catalog, or hung.", {},
              double(o.failed_runs));
    w.counter("strata_node_orphans_deleted_total",
              "Objects the node's cleanup deleted: no manifest referenced them.", {},
              double(o.deleted));
    w.counter("strata_node_orphans_deleted_bytes_total", "Bytes of those objects.", {},
              double(o.deleted_bytes));
  }
  w.counter("strata_node_writer_restarts_total",
            "Fail-stopped stream writers brought back without a restart of the node.", {},
            double(dw.restarts));
  w.counter("strata_node_writer_restart_failures_total",
            "Attempts to bring a fail-stopped writer back that failed (retried later).", {},
            double(dw.failed_restarts));
  w.gauge("strata_process_threads", "Threads of the process.", {}, double(thread_count()));
  w.gauge("strata_process_resident_bytes", "Resident memory of the process.", {},
          double(rss_bytes()));
  return w.text();
}

}  // namespace strata::node
