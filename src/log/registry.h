// StreamRegistry: the streams of one data directory (a stream = a
// subdirectory holding its log). Creates, opens, lists and deletes streams,
// and keeps each open stream's StreamLog so a stream is opened once per
// process.
//
// Names follow common/stream_name.h; a stream's directory is named by its
// component (common/name_component.h), which never starts with '.', so the
// registry's own entries below (all starting with '.') are never a
// stream's. A hashed component cannot be decoded: such a directory also
// holds the name in a file, kStreamNameFile, written before the directory
// is published.
//
// Create and delete are crash-atomic (tested with FaultFileSystem):
//  - create builds the stream in `.creating-<component>`, fsyncs it,
//    renames it to `<component>` and fsyncs the data directory; a crash
//    leaves either no stream or a complete empty one;
//  - delete renames `<component>` to a tombstone
//    `.deleting-<component>.<n>`, fsyncs the data directory, then removes
//    the tombstone; a crash leaves either the whole stream or a tombstone,
//    never a half stream.
// Open finishes what a crash interrupted: leftover `.creating-*` and
// `.deleting-*` entries are removed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/log_options.h"
#include "log/stream_log.h"

namespace strata::log {

class StreamRegistry {
 public:
  // Opens (creating if missing) the data directory. `defaults` are the
  // options of every stream opened through the registry unless a call
  // passes its own; defaults.fs is the file system of the data directory.
  static Result<std::unique_ptr<StreamRegistry>> open(const std::string& data_dir,
                                                      LogOptions defaults = {});
  ~StreamRegistry();

  // Creates an empty stream; already_exists if it exists.
  Result<std::shared_ptr<StreamLog>> create(const std::string& name);
  Result<std::shared_ptr<StreamLog>> create(const std::string& name, const LogOptions& opts);
  // Files of the stream's owner that must exist whenever the stream does
  // (node/stream_settings_file.h): `prepare` writes them, durably, into the
  // stream's directory while it is still under its temporary name, so they
  // are published with it by the same rename. Names ending in .tmp, names
  // of log files and kStreamNameFile are the log's.
  using PrepareDir = std::function<Status(FileSystem& fs, const std::string& dir)>;
  Result<std::shared_ptr<StreamLog>> create(const std::string& name, const LogOptions& opts,
                                            const PrepareDir& prepare);
  // Opens an existing stream (or returns it if already open); not_found if absent.
  Result<std::shared_ptr<StreamLog>> open_stream(const std::string& name);
  Result<std::shared_ptr<StreamLog>> open_stream(const std::string& name, const LogOptions& opts);
  Result<std::shared_ptr<StreamLog>> open_or_create(const std::string& name);
  // Durably deletes a stream (closing it if open); not_found if absent.
  Status remove(const std::string& name);
  // Names of the streams on disk, sorted. An entry that is no stream's
  // directory is skipped (with a warning when it looks like one).
  Result<std::vector<std::string>> list();
  bool exists(const std::string& name);
  // The directory of stream `name` (which need not exist).
  std::string dir_of(std::string_view name) const;
  // Closes every open stream (first error returned). Idempotent.
  Status close_all();

  const std::string& data_dir() const { return data_dir_; }
  FileSystem& fs() const { return fs_; }

 private:
  StreamRegistry(std::string data_dir, LogOptions defaults);
  Status finish_interrupted();
  Result<std::shared_ptr<StreamLog>> open_locked(const std::string& name, const LogOptions& opts);

  const std::string data_dir_;
  const LogOptions defaults_;
  FileSystem& fs_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<StreamLog>> open_;
};

// In a hashed component's directory: the stream's name, as is.
inline constexpr std::string_view kStreamNameFile = "name";

// <data_dir>/<component of name>.
std::string stream_dir(const std::string& data_dir, std::string_view name);
// The stream whose directory `entry` of `data_dir` is: its component
// decoded, or for a hashed component the name its kStreamNameFile holds
// (when that name's component is `entry`); nullopt for anything else (the
// registry's own entries, stray files). Only reads.
std::optional<std::string> stream_of_entry(FileSystem& fs, const std::string& data_dir,
                                           const std::string& entry);

// Opens stream `name` of `data_dir` read-only, outside any registry: no
// writer lock, no repair, following its writer from disk — for tools that
// read beside a running producer or node. Errors: an invalid name, or
// not_found from no_such_stream.
Result<std::shared_ptr<StreamLog>> open_stream_read_only(const std::string& data_dir,
                                                         std::string_view name);
// "no stream 'x' in D (streams: a, b)" — so a typo is obvious.
Error no_such_stream(const std::string& data_dir, std::string_view name);

}  // namespace strata::log
