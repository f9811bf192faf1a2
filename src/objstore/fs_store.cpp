#include "objstore/fs_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/publish_file.h"
#include "net/base64.h"
#include "objstore/key.h"

namespace strata::objstore {

namespace {

constexpr char kTrailerMagic[4] = {'S', 'O', 'B', 'J'};
constexpr uint32_t kTrailerVersion = 1;
// A concurrent remove() may prune the directory a put() just created; the
// put then recreates it. Bounded so a pathological race cannot spin.
constexpr int kPutAttempts = 8;
// get_to reads and hands on the body in pieces of at most this size.
constexpr uint64_t kGetPieceBytes = 1u << 20;

ObjectError fs_error(Op op, std::string_view key, RetryClass rc, std::string msg) {
  ObjectError e;
  e.op = op;
  e.key = std::string(key);
  e.retry = rc;
  e.message = std::move(msg);
  return e;
}

// A file-layer error as an object error: a missing file is not_found for
// reads; everything else (EIO, ENOSPC, a crashed FaultFileSystem...) is
// fatal: retrying at once rarely helps a broken disk, and the caller's slow
// retry raises an alert.
ObjectError fs_error(Op op, std::string_view key, const Error& e, bool missing_is_not_found) {
  RetryClass rc = (missing_is_not_found && e.code == Errc::not_found) ? RetryClass::not_found
                                                                      : RetryClass::fatal;
  return fs_error(op, key, rc, e.to_string());
}

std::string encode_trailer(uint32_t crc) {
  std::string t(kFsTrailerBytes, '\0');
  std::copy(kTrailerMagic, kTrailerMagic + 4, t.begin());
  put_be32(u8(t.data() + 4), kTrailerVersion);
  put_be32(u8(t.data() + 8), crc);
  return t;
}

std::string etag_of(uint32_t crc) {
  return fmt::format("{:08x}", crc);
}

}  // namespace

struct FsObjectStore::Located {
  std::string dir;   // directory holding the object file
  std::string name;  // last key segment
  std::string file() const { return path_join(dir, "f_" + name); }
};

Result<std::unique_ptr<FsObjectStore>> FsObjectStore::open(FileSystem& fs, std::string root,
                                                           bool create_if_missing,
                                                           uint64_t max_get_bytes) {
  if (root.empty()) return Error(Errc::invalid_argument, "fs object store: empty root path");
  if (max_get_bytes < 1) return Error(Errc::invalid_argument, "objstore max_get_bytes < 1");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  auto st = fs.stat(root);
  if (!st.ok()) {
    if (st.code() != Errc::not_found || !create_if_missing) {
      return std::move(st).error().with_context("fs object store root " + root);
    }
    STRATA_TRY(create_dirs(fs, root));
  } else if (!st->is_dir) {
    return Error(Errc::invalid_argument,
                 fmt::format("fs object store root {} is not a directory", root));
  }
  return std::unique_ptr<FsObjectStore>(new FsObjectStore(fs, std::move(root), max_get_bytes));
}

std::string FsObjectStore::describe() const {
  return "fs:" + root_;
}

ObjectResult<FsObjectStore::Located> FsObjectStore::locate(Op op, std::string_view key) const {
  if (auto p = key_problem(key)) {
    return fs_error(op, key, RetryClass::fatal, "invalid key: " + *p);
  }
  Located loc;
  loc.dir = root_;
  size_t start = 0;
  while (true) {
    size_t slash = key.find('/', start);
    if (slash == std::string_view::npos) {
      loc.name = std::string(key.substr(start));
      break;
    }
    loc.dir = path_join(loc.dir, "d_" + std::string(key.substr(start, slash - start)));
    start = slash + 1;
  }
  return loc;
}

ObjectResult<uint32_t> FsObjectStore::read_trailer(Op op, std::string_view key, File& f,
                                                   uint64_t file_size) {
  if (file_size < kFsTrailerBytes) {
    return fs_error(op, key, RetryClass::fatal,
                    fmt::format("corrupt object file {}: {} bytes, shorter than its trailer",
                                f.path(), file_size));
  }
  char t[kFsTrailerBytes];
  if (auto s = read_exact(f, file_size - kFsTrailerBytes, t, sizeof t); !s.ok()) {
    return fs_error(op, key, s.error(), false);
  }
  if (!std::equal(kTrailerMagic, kTrailerMagic + 4, t) || get_be32(u8(t + 4)) != kTrailerVersion) {
    return fs_error(op, key, RetryClass::fatal,
                    fmt::format("corrupt object file {}: bad trailer magic or version", f.path()));
  }
  return get_be32(u8(t + 8));
}

ObjectStatus FsObjectStore::put_once(const Located& loc, std::string_view key, BodyParts body,
                                     std::optional<uint32_t> expected_crc,
                                     const std::function<void(uint64_t)>& progress,
                                     uint32_t* crc_out, bool* dir_vanished) {
  *dir_vanished = false;
  if (auto s = create_dirs(fs_, loc.dir); !s.ok()) {
    // A concurrent remove() pruned a parent between our stat and mkdir.
    *dir_vanished = s.code() == Errc::not_found;
    return fs_error(Op::put, key, s.error(), false);
  }
  std::string tmp;
  std::unique_ptr<File> f;
  // A leftover temporary file of a crashed process may hold the name.
  for (int i = 0; i < 16 && !f; ++i) {
    tmp = path_join(
        loc.dir, fmt::format("t_{}.{:x}.{:x}", loc.name, ::getpid(), temp_counter_.fetch_add(1)));
    auto r = fs_.open(tmp, OpenOptions::create_new());
    if (r.ok()) {
      f = std::move(r).value();
    } else if (r.code() == Errc::not_found) {
      *dir_vanished = true;
      return fs_error(Op::put, key, RetryClass::fatal, "directory vanished: " + loc.dir);
    } else if (r.code() != Errc::already_exists) {
      return fs_error(Op::put, key, r.error(), false);
    }
  }
  if (!f) return fs_error(Op::put, key, RetryClass::fatal, "no free temporary file name");

  auto fail = [&](const Error& e) -> ObjectStatus {
    f.reset();
    if (auto s = fs_.remove(tmp); !s.ok()) {
      spdlog::warn("objstore fs: could not remove temporary file {}: {}", tmp, s.to_string());
    }
    return fs_error(Op::put, key, e, false);
  };
  // One pass: the CRC is computed as the parts are written (the trailer
  // comes last), and checked against the caller's before anything is synced
  // or renamed, so a mismatch stores nothing.
  uint32_t crc = 0;
  Status written = for_each_body_piece(
      body,
      [&](BytesView piece) {
        crc = crc32c::extend(crc, piece.data(), piece.size());
        return f->append(piece);
      },
      progress);
  if (!written.ok()) return fail(written.error());
  if (expected_crc && *expected_crc != crc) {
    f.reset();
    if (auto s = fs_.remove(tmp); !s.ok()) {
      spdlog::warn("objstore fs: could not remove temporary file {}: {}", tmp, s.to_string());
    }
    return fs_error(Op::put, key, RetryClass::fatal,
                    fmt::format("checksum mismatch: body CRC32C {:08x}, caller said {:08x}; "
                                "nothing stored",
                                crc, *expected_crc));
  }
  *crc_out = crc;
  if (auto s = f->append(encode_trailer(crc)); !s.ok()) return fail(s.error());
  // Acknowledged only once the directory fsync made the name durable: until
  // then a crash may forget the object. publish_file removes the temporary
  // file if a step up to the rename fails.
  if (auto s = publish_file(fs_, std::move(f), loc.file()); !s.ok()) {
    return fs_error(Op::put, key, s.error(), false);
  }
  return {};
}

ObjectResult<PutResult> FsObjectStore::put(std::string_view key, BodyParts body,
                                           const PutOptions& opts) {
  auto loc = locate(Op::put, key);
  if (!loc.ok()) return std::move(loc).error();
  for (int attempt = 1;; ++attempt) {
    bool vanished = false;
    uint32_t crc = 0;
    ObjectStatus s = put_once(*loc, key, body, opts.crc32c, opts.on_progress, &crc, &vanished);
    if (s.ok()) return PutResult{etag_of(crc), crc};
    if (!vanished || attempt == kPutAttempts) return std::move(s).error();
  }
}

ObjectResult<uint64_t> FsObjectStore::get_to(std::string_view key, const GetSink& sink,
                                             const GetLimits& limits) {
  auto loc = locate(Op::get, key);
  if (!loc.ok()) return std::move(loc).error();
  auto f = fs_.open(loc->file(), OpenOptions::read_only());
  if (!f.ok()) return fs_error(Op::get, key, f.error(), true);
  auto size = (*f)->size();
  if (!size.ok()) return fs_error(Op::get, key, size.error(), false);
  auto crc = read_trailer(Op::get, key, **f, *size);
  if (!crc.ok()) return std::move(crc).error();
  const uint64_t body = *size - kFsTrailerBytes;
  if (body > limits.max_bytes) return over_cap_error(Op::get, key, limits.max_bytes, body);
  if (sink.on_size) {
    if (Status s = sink.on_size(body); !s.ok()) return sink_error(Op::get, key, 0, s.error());
  }
  // Pieces small enough to stay in cache between the read, the CRC and the
  // sink's copy.
  const size_t piece = size_t(std::min<uint64_t>(body, kGetPieceBytes));
  auto buf = std::make_unique_for_overwrite<char[]>(std::max<size_t>(piece, 1));
  uint32_t actual = 0;
  for (uint64_t pos = 0; pos < body;) {
    const size_t n = size_t(std::min<uint64_t>(piece, body - pos));
    if (auto s = read_exact(**f, pos, buf.get(), n); !s.ok()) {
      return fs_error(Op::get, key, s.error(), false);
    }
    actual = crc32c::extend(actual, buf.get(), n);
    if (Status s = sink.on_piece(BytesView(buf.get(), n)); !s.ok()) {
      return sink_error(Op::get, key, pos, s.error());
    }
    pos += n;
  }
  if (actual != *crc) {
    return fs_error(Op::get, key, RetryClass::fatal,
                    fmt::format("checksum mismatch: object file {} has CRC32C {:08x}, its "
                                "trailer says {:08x}",
                                loc->file(), actual, *crc));
  }
  return body;
}

ObjectResult<uint64_t> FsObjectStore::read_range(std::string_view key, uint64_t offset,
                                                 std::span<uint8_t> dst) {
  auto loc = locate(Op::get_range, key);
  if (!loc.ok()) return std::move(loc).error();
  if (dst.empty()) {
    return fs_error(Op::get_range, key, RetryClass::fatal, "ranged get into an empty buffer");
  }
  auto f = fs_.open(loc->file(), OpenOptions::read_only());
  if (!f.ok()) return fs_error(Op::get_range, key, f.error(), true);
  auto size = (*f)->size();
  if (!size.ok()) return fs_error(Op::get_range, key, size.error(), false);
  auto crc = read_trailer(Op::get_range, key, **f, *size);
  if (!crc.ok()) return std::move(crc).error();
  uint64_t body = *size - kFsTrailerBytes;
  if (offset >= body) {
    return fs_error(Op::get_range, key, RetryClass::fatal,
                    fmt::format("range start {} is not below the object size {}", offset, body));
  }
  const uint64_t n = std::min<uint64_t>(dst.size(), body - offset);
  if (auto s = read_exact(**f, offset, reinterpret_cast<char*>(dst.data()), size_t(n)); !s.ok()) {
    return fs_error(Op::get_range, key, s.error(), false);
  }
  return n;
}

ObjectResult<ObjectInfo> FsObjectStore::head(std::string_view key) {
  auto loc = locate(Op::head, key);
  if (!loc.ok()) return std::move(loc).error();
  auto f = fs_.open(loc->file(), OpenOptions::read_only());
  if (!f.ok()) return fs_error(Op::head, key, f.error(), true);
  auto size = (*f)->size();
  if (!size.ok()) return fs_error(Op::head, key, size.error(), false);
  auto crc = read_trailer(Op::head, key, **f, *size);
  if (!crc.ok()) return std::move(crc).error();
  auto st = fs_.stat(loc->file());
  if (!st.ok()) return fs_error(Op::head, key, st.error(), true);
  return ObjectInfo{std::string(key), *size - kFsTrailerBytes, etag_of(*crc), *crc, st->mtime_ms};
}

void FsObjectStore::prune_empty_dirs(const std::string& start) {
  // Best effort: a put() racing into the directory makes remove_dir fail
  // (not empty) or makes the put recreate it; both are fine.
  std::string dir = start;
  while (dir.size() > root_.size() && dir.compare(0, root_.size(), root_) == 0) {
    auto names = fs_.list_dir(dir);
    if (!names.ok() || !names->empty()) return;
    if (!fs_.remove_dir(dir).ok()) return;
    std::string parent = path_parent(dir);
    if (auto s = fs_.sync_dir(parent); !s.ok()) {
      spdlog::debug("objstore fs: sync of {} after pruning failed: {}", parent, s.to_string());
      return;
    }
    dir = parent;
  }
}

ObjectStatus FsObjectStore::remove(std::string_view key) {
  auto loc = locate(Op::remove, key);
  if (!loc.ok()) return std::move(loc).error();
  auto s = fs_.remove(loc->file());
  if (!s.ok()) {
    if (s.code() == Errc::not_found) return {};  // idempotent, as on S3
    return fs_error(Op::remove, key, s.error(), false);
  }
  // A concurrent remove of the directory's last other file may have pruned
  // the directory already: then the removal is as durable as it gets.
  if (auto d = fs_.sync_dir(loc->dir); !d.ok() && d.code() != Errc::not_found) {
    return fs_error(Op::remove, key, d.error(), false);
  }
  prune_empty_dirs(loc->dir);
  return {};
}

std::vector<RemoveOutcome> FsObjectStore::remove_many(std::span<const std::string> keys) {
  std::vector<RemoveOutcome> out;
  out.reserve(keys.size());
  for (const auto& k : keys) {
    auto s = remove(k);
    RemoveOutcome o{k, std::nullopt};
    if (!s.ok()) {
      o.error = std::move(s).error();
      o.error->op = Op::remove_many;
    }
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

// Where a listing starts: the keys after the continuation point (the token
// is the last key returned, base64-encoded: opaque to callers); "" for the
// first page. Checks the request first.
ObjectResult<std::string> list_start_after(const ListRequest& req) {
  const std::string& prefix = req.prefix;
  if (auto p = prefix_problem(prefix)) {
    return fs_error(Op::list, prefix, RetryClass::fatal, "invalid prefix: " + *p);
  }
  if (req.max_keys < 1 || req.max_keys > kMaxListKeys) {
    return fs_error(Op::list, prefix, RetryClass::fatal,
                    fmt::format("max_keys {} outside 1..{}", req.max_keys, kMaxListKeys));
  }
  if (req.continuation_token.empty()) return std::string();
  auto decoded = net::base64_decode(req.continuation_token);
  if (!decoded || key_problem(*decoded)) {
    return fs_error(Op::list, prefix, RetryClass::fatal,
                    "invalid continuation token '" + req.continuation_token + "'");
  }
  return std::move(*decoded);
}

// The directory holding a prefix's last (possibly partial) segment, the key
// prefix of the entries in it, and that last segment, which their names
// must start with: "a/b/da" is directory d_a/d_b, keys "a/b/", names "da*".
struct PrefixDir {
  std::string dir;
  std::string key_prefix;
  std::string name_prefix;
};

PrefixDir prefix_dir(const std::string& root, const std::string& prefix) {
  PrefixDir p{root, "", prefix};
  size_t last_slash = prefix.rfind('/');
  if (last_slash == std::string::npos) return p;
  size_t start = 0;
  while (start <= last_slash) {
    size_t slash = prefix.find('/', start);
    p.dir = path_join(p.dir, "d_" + prefix.substr(start, slash - start));
    start = slash + 1;
  }
  p.key_prefix = prefix.substr(0, last_slash + 1);
  p.name_prefix = prefix.substr(last_slash + 1);
  return p;
}

// The files under a prefix, one at a time in S3's bytewise key order,
// descending into directories depth first with an explicit stack (no
// recursion over a tree of unbounded depth).
class ListWalk {
 public:
  struct Entry {
    std::string key;  // full key (file) or key prefix ending in '/' (dir)
    std::string path;
    bool is_dir;
  };

  ListWalk(FileSystem& fs, std::string prefix, std::string after)
      : fs_(fs), prefix_(std::move(prefix)), after_(std::move(after)) {}

  ObjectStatus start(const PrefixDir& p) { return push(p.dir, p.key_prefix, p.name_prefix); }

  // The next file in key order; nullopt once every file has been walked.
  ObjectResult<std::optional<Entry>> next_file() {
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.next == top.entries.size()) {
        stack_.pop_back();
        continue;
      }
      Entry e = std::move(top.entries[top.next++]);
      if (!e.is_dir) return std::optional<Entry>(std::move(e));
      if (auto st = push(e.path, e.key, ""); !st.ok()) return std::move(st).error();
    }
    return std::optional<Entry>();
  }

 private:
  struct Frame {
    std::vector<Entry> entries;
    size_t next = 0;
  };

  // Reads `dir` (whose entries' keys start with `key_prefix`), keeping the
  // object files and directories whose segment starts with `filter` and that
  // may hold keys after the continuation point, sorted by key.
  ObjectStatus push(const std::string& dir, const std::string& key_prefix,
                    std::string_view filter) {
    Frame fr;
    auto names = fs_.list_dir(dir);
    if (!names.ok()) {
      if (names.code() == Errc::not_found) return {};
      return fs_error(Op::list, prefix_, names.error(), false);
    }
    for (auto& n : *names) {
      if (n.size() < 2 || n[1] != '_' || (n[0] != 'f' && n[0] != 'd')) continue;
      std::string seg = n.substr(2);
      if (seg.compare(0, filter.size(), filter) != 0) continue;
      bool is_dir = n[0] == 'd';
      std::string key = key_prefix + seg + (is_dir ? "/" : "");
      // Skip what lies wholly at or before the continuation point: a file
      // key <= after, or a directory all of whose keys sort before it.
      if (!after_.empty()) {
        if (!is_dir && key <= after_) continue;
        if (is_dir && key < after_ && after_.compare(0, key.size(), key) != 0) continue;
      }
      fr.entries.push_back({std::move(key), path_join(dir, n), is_dir});
    }
    // S3 order: a directory's keys all start with "<seg>/", so sorting by
    // that string merges files and directories in bytewise key order.
    std::sort(fr.entries.begin(), fr.entries.end(),
              [](const Entry& a, const Entry& b) { return a.key < b.key; });
    stack_.push_back(std::move(fr));
    return {};
  }

  FileSystem& fs_;
  const std::string prefix_;  // the listing's, for errors
  const std::string after_;
  std::vector<Frame> stack_;
};

}  // namespace

ObjectResult<std::optional<ObjectInfo>> FsObjectStore::listed_object(const std::string& key,
                                                                     const std::string& path,
                                                                     const std::string& prefix) {
  ObjectInfo info;
  info.key = key;
  auto f = fs_.open(path, OpenOptions::read_only());
  if (!f.ok()) {
    if (f.code() == Errc::not_found) return std::optional<ObjectInfo>();  // removed while listing
    return fs_error(Op::list, prefix, f.error(), false);
  }
  auto size = (*f)->size();
  if (!size.ok()) return fs_error(Op::list, prefix, size.error(), false);
  // A damaged object is still listed (so GC can see and remove it), with
  // the size of whatever body it has and no etag.
  auto crc = read_trailer(Op::list, key, **f, *size);
  info.size = *size >= kFsTrailerBytes ? *size - kFsTrailerBytes : 0;
  if (crc.ok()) info.etag = etag_of(*crc);
  auto st = fs_.stat(path);
  if (!st.ok()) {
    if (st.code() == Errc::not_found) return std::optional<ObjectInfo>();  // removed while listing
    return fs_error(Op::list, prefix, st.error(), false);
  }
  info.last_modified_ms = st->mtime_ms;
  return std::optional<ObjectInfo>(std::move(info));
}

ObjectResult<ListPage> FsObjectStore::list(const ListRequest& req) {
  auto after = list_start_after(req);
  if (!after.ok()) return std::move(after).error();
  ListWalk walk(fs_, req.prefix, std::move(*after));
  if (auto st = walk.start(prefix_dir(root_, req.prefix)); !st.ok()) return std::move(st).error();
  ListPage page;
  for (;;) {
    auto e = walk.next_file();
    if (!e.ok()) return std::move(e).error();
    if (!*e) return page;
    // A file beyond a full page: there is more, from the page's last key.
    if (page.objects.size() == size_t(req.max_keys)) {
      page.next_token = net::base64_encode(page.objects.back().key);
      return page;
    }
    auto info = listed_object((*e)->key, (*e)->path, req.prefix);
    if (!info.ok()) return std::move(info).error();
    if (*info) page.objects.push_back(std::move(**info));
  }
}

ObjectStatus FsObjectStore::check_access() {
  auto st = fs_.stat(root_);
  if (!st.ok()) return fs_error(Op::check, "", st.error(), false);
  if (!st->is_dir) {
    return fs_error(Op::check, "", RetryClass::fatal, root_ + " is not a directory");
  }
  // Prove the root is writable with a temporary file (never an object).
  std::string tmp =
      path_join(root_, fmt::format("t_check.{:x}.{:x}", ::getpid(), temp_counter_.fetch_add(1)));
  auto f = fs_.open(tmp, OpenOptions::create_new());
  if (!f.ok()) return fs_error(Op::check, "", f.error(), false);
  f->reset();
  if (auto s = fs_.remove(tmp); !s.ok()) return fs_error(Op::check, "", s.error(), false);
  return {};
}

Result<size_t> FsObjectStore::sweep_temp_files() {
  size_t removed = 0;
  std::vector<std::string> dirs{root_};
  while (!dirs.empty()) {
    std::string dir = std::move(dirs.back());
    dirs.pop_back();
    STRATA_ASSIGN_OR_RETURN(auto names, fs_.list_dir(dir));
    bool any = false;
    for (const auto& n : names) {
      if (n.compare(0, 2, "d_") == 0) dirs.push_back(path_join(dir, n));
      if (n.compare(0, 2, "t_") == 0) {
        STRATA_TRY(fs_.remove(path_join(dir, n)));
        ++removed;
        any = true;
      }
    }
    if (any) STRATA_TRY(fs_.sync_dir(dir));
  }
  return removed;
}

}  // namespace strata::objstore
