// StreamRegistry: the streams of one data directory (a stream = a
// subdirectory holding its log). Creates, opens, lists and deletes streams,
// and keeps each open stream's StreamLog so a stream is opened once per
// process.
//
// Create and delete are crash-atomic (tested with FaultFileSystem):
//  - create builds the stream in `.creating-<name>`, fsyncs it, renames it
//    to `<name>` and fsyncs the data directory; a crash leaves either no
//    stream or a complete empty one;
//  - delete renames `<name>` to a tombstone `.deleting-<name>.<n>`, fsyncs
//    the data directory, then removes the tombstone; a crash leaves either
//    the whole stream or a tombstone, never a half stream.
// Open finishes what a crash interrupted: leftover `.creating-*` and
// `.deleting-*` entries are removed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
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

  // Stream names: 1..200 characters of [A-Za-z0-9._-], not starting with '.'.
  static Status validate_name(std::string_view name);

  // Creates an empty stream; already_exists if it exists.
  Result<std::shared_ptr<StreamLog>> create(const std::string& name);
  Result<std::shared_ptr<StreamLog>> create(const std::string& name, const LogOptions& opts);
  // Files of the stream's owner that must exist whenever the stream does
  // (node/stream_settings_file.h): `prepare` writes them, durably, into the
  // stream's directory while it is still under its temporary name, so they
  // are published with it by the same rename. Names ending in .tmp and
  // names of log files are the log's.
  using PrepareDir = std::function<Status(FileSystem& fs, const std::string& dir)>;
  Result<std::shared_ptr<StreamLog>> create(const std::string& name, const LogOptions& opts,
                                            const PrepareDir& prepare);
  // Opens an existing stream (or returns it if already open); not_found if absent.
  Result<std::shared_ptr<StreamLog>> open_stream(const std::string& name);
  Result<std::shared_ptr<StreamLog>> open_stream(const std::string& name, const LogOptions& opts);
  Result<std::shared_ptr<StreamLog>> open_or_create(const std::string& name);
  // Durably deletes a stream (closing it if open); not_found if absent.
  Status remove(const std::string& name);
  // Names of the streams on disk, sorted.
  Result<std::vector<std::string>> list();
  bool exists(const std::string& name);
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

// Opens stream `name` of `data_dir` read-only, outside any registry: no
// writer lock, no repair, following its writer from disk — for tools that
// read beside a running producer or node. Errors: an invalid name, or
// not_found from no_such_stream.
Result<std::shared_ptr<StreamLog>> open_stream_read_only(const std::string& data_dir,
                                                         std::string_view name);
// "no stream 'x' in D (streams: a, b)" — so a typo is obvious.
Error no_such_stream(const std::string& data_dir, std::string_view name);

}  // namespace strata::log
