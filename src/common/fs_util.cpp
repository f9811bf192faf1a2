// Helpers over the FileSystem interface; they work the same on the real and
// the fault-injecting file system.
#include <fmt/format.h>

#include "common/fs.h"
#include "common/publish_file.h"

namespace strata {

Status File::reserve(uint64_t, uint64_t) {
  return Error(Errc::unsupported,
               fmt::format("{}: this file layer does not reserve space", path()));
}

std::string path_join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string path_parent(const std::string& path) {
  auto end = path.find_last_not_of('/');
  if (end == std::string::npos) return "/";
  auto pos = path.rfind('/', end);
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string path_basename(const std::string& path) {
  auto end = path.find_last_not_of('/');
  if (end == std::string::npos) return "/";
  auto pos = path.rfind('/', end);
  return path.substr(pos == std::string::npos ? 0 : pos + 1,
                     end - (pos == std::string::npos ? 0 : pos + 1) + 1);
}

bool exists(FileSystem& fs, const std::string& path) {
  return fs.stat(path).ok();
}

Status create_dirs(FileSystem& fs, const std::string& path) {
  auto st = fs.stat(path);
  if (st.ok()) {
    if (!st->is_dir) return Error(Errc::already_exists, path + " exists and is not a directory");
    return Status::OK();
  }
  if (st.code() != Errc::not_found) return st.error();
  std::string parent = path_parent(path);
  if (parent != path && parent != "." && parent != "/") STRATA_TRY(create_dirs(fs, parent));
  Status s = fs.create_dir(path);
  if (!s.ok() && s.code() != Errc::already_exists) return s;
  return fs.sync_dir(parent == "." ? std::string(".") : parent);
}

Result<Bytes> read_file(FileSystem& fs, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto f, fs.open(path, OpenOptions::read_only()));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f->size());
  Bytes out(size, '\0');
  STRATA_TRY(read_exact(*f, 0, out.data(), out.size()));
  return out;
}

Status read_exact(File& f, uint64_t offset, char* buf, size_t n) {
  STRATA_ASSIGN_OR_RETURN(size_t got, f.read_at(offset, buf, n));
  if (got != n) {
    return Error(Errc::corrupt, fmt::format("{}: short read at position {} ({} of {} bytes)",
                                            f.path(), offset, got, n));
  }
  return Status::OK();
}

Status write_file_atomic(FileSystem& fs, const std::string& path, BytesView data) {
  return publish_file(fs, path, [&](File& f) { return f.append(data); });
}

Status remove_all(FileSystem& fs, const std::string& path) {
  auto st = fs.stat(path);
  if (!st.ok()) return st.code() == Errc::not_found ? Status::OK() : Status(st.error());
  if (!st->is_dir) return fs.remove(path);
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(path));
  for (const auto& n : names) STRATA_TRY(remove_all(fs, path_join(path, n)));
  return fs.remove_dir(path);
}

}  // namespace strata
