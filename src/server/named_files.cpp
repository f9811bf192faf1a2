#include "server/named_files.h"

#include <spdlog/spdlog.h>

#include "catalog/stream_name.h"
#include "common/publish_file.h"

namespace strata::server {

Status load_named_files(FileSystem& fs, const std::string& dir, std::string_view owner,
                        std::string_view file_kind,
                        const std::function<Status(const std::string& name, const std::string& path,
                                                   Bytes bytes)>& each) {
  STRATA_TRY(create_dirs(fs, dir));
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  for (const std::string& name : names) {
    const std::string path = path_join(dir, name);
    if (is_publish_leftover(name)) {
      STRATA_TRY(fs.remove(path));
      continue;
    }
    if (!catalog::validate_stream_name(name).ok()) {
      spdlog::warn("{}: ignoring {}: not {}", owner, path, file_kind);
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Bytes bytes, read_file(fs, path));
    STRATA_TRY(each(name, path, std::move(bytes)));
  }
  return Status::OK();
}

}  // namespace strata::server
