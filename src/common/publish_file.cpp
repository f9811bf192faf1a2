#include "common/publish_file.h"

#include <spdlog/spdlog.h>

namespace strata {

namespace {

void remove_temp(FileSystem& fs, const std::string& temp) {
  Status s = fs.remove(temp);
  if (!s.ok() && s.code() != Errc::not_found) {
    spdlog::warn("could not remove temporary file {}: {}", temp, s.to_string());
  }
}

}  // namespace

Status rename_durable(FileSystem& fs, const std::string& from, const std::string& to) {
  STRATA_TRY(fs.rename(from, to));
  return fs.sync_dir(path_parent(to));
}

Status publish_file(FileSystem& fs, std::unique_ptr<File> temp, const std::string& final_path) {
  const std::string temp_path = temp->path();
  Status s = temp->sync();
  temp.reset();  // closed before the rename: nothing writes the file after it is published
  if (s.ok()) s = fs.rename(temp_path, final_path);
  if (!s.ok()) {
    remove_temp(fs, temp_path);
    return s;
  }
  return fs.sync_dir(path_parent(final_path));
}

Status publish_file(FileSystem& fs, const std::string& final_path,
                    const std::function<Status(File&)>& write, std::string_view temp_suffix) {
  const std::string temp_path = final_path + std::string(temp_suffix);
  STRATA_ASSIGN_OR_RETURN(auto temp, fs.open(temp_path, OpenOptions::create_truncate()));
  if (Status s = write(*temp); !s.ok()) {
    temp.reset();
    remove_temp(fs, temp_path);
    return s;
  }
  return publish_file(fs, std::move(temp), final_path);
}

}  // namespace strata
