#include "import/rabbit_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace strata::import {

namespace {

using json = nlohmann::json;

bool base64uri_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '=';
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<std::string> stream_root_of(FileSystem& fs, const std::string& rabbit_dir) {
  auto is_dir = [&](const std::string& p) {
    auto st = fs.stat(p);
    return st.ok() && st->is_dir;
  };
  if (!is_dir(rabbit_dir)) {
    return Error(Errc::not_found, fmt::format("{}: no such directory", rabbit_dir));
  }
  const std::string sub = path_join(rabbit_dir, "stream");
  if (is_dir(sub)) return sub;
  if (path_basename(rabbit_dir) == "stream") return rabbit_dir;
  return Error(Errc::invalid_argument,
               fmt::format("{}: neither a RabbitMQ node directory (it has no stream/) nor its "
                           "stream/ directory",
                           rabbit_dir));
}

Result<std::vector<std::string>> segments_of(FileSystem& fs, const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (!n.ends_with(".segment")) continue;
    // Osiris names a segment by its first offset, 20 digits: name order is
    // offset order.
    if (!all_digits(std::string_view(n).substr(0, n.size() - 8))) continue;
    out.push_back(path_join(dir, n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string osiris_dir_prefix(std::string_view vhost, std::string_view name) {
  std::string s;
  s.reserve(vhost.size() + name.size() + 2);
  for (char c : vhost) s.push_back(base64uri_char(c) ? c : '_');
  s.push_back('_');
  for (char c : name) s.push_back(base64uri_char(c) ? c : '_');
  s.push_back('_');
  return s;
}

Result<RabbitLayout> read_rabbit_layout(FileSystem& fs, const std::string& rabbit_dir,
                                        const json& definitions, const std::string& vhost) {
  RabbitLayout out;
  STRATA_ASSIGN_OR_RETURN(out.stream_root, stream_root_of(fs, rabbit_dir));
  if (!definitions.is_object() || !definitions.contains("queues") ||
      !definitions["queues"].is_array()) {
    return Error(Errc::invalid_argument,
                 "the definitions have no \"queues\" array (expected the output of rabbitmqctl "
                 "export_definitions)");
  }
  std::vector<std::string> dirs;
  {
    STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(out.stream_root));
    for (auto& n : names) {
      auto st = fs.stat(path_join(out.stream_root, n));
      if (st.ok() && st->is_dir) dirs.push_back(std::move(n));
    }
    std::sort(dirs.begin(), dirs.end());
  }
  std::map<std::string, int> claimed;  // directory → streams mapping to it
  size_t i = 0;
  for (const auto& q : definitions["queues"]) {
    const size_t at = i++;
    if (!q.is_object()) {
      return Error(Errc::invalid_argument,
                   fmt::format("definitions: queues[{}] is not an object", at));
    }
    const json args = q.value("arguments", json::object());
    if (!args.is_object() || args.value("x-queue-type", json()) != json("stream")) continue;
    if (!q.contains("name") || !q["name"].is_string() || !q.contains("vhost") ||
        !q["vhost"].is_string()) {
      return Error(Errc::invalid_argument,
                   fmt::format("definitions: queues[{}] has no string name and vhost", at));
    }
    RabbitStream s;
    s.vhost = q["vhost"].get<std::string>();
    s.name = q["name"].get<std::string>();
    s.arguments = args;
    if (s.vhost != vhost) {
      out.other_vhosts.push_back(s.vhost + "/" + s.name);
      continue;
    }
    const std::string prefix = osiris_dir_prefix(s.vhost, s.name);
    std::vector<std::string> found;
    for (const auto& d : dirs) {
      if (d.starts_with(prefix) && all_digits(std::string_view(d).substr(prefix.size()))) {
        found.push_back(d);
      }
    }
    if (found.size() == 1) {
      s.dir = path_join(out.stream_root, found[0]);
      claimed[found[0]] += 1;
      STRATA_ASSIGN_OR_RETURN(s.segments, segments_of(fs, s.dir));
    } else if (found.empty()) {
      s.problem = fmt::format(
          "no directory {}<creation time> under {} (on a cluster, import "
          "from a node that holds the stream)",
          prefix, out.stream_root);
    } else {
      s.problem = fmt::format(
          "{} directories under {} could be it ({}): import from a copy "
          "that holds only the right one",
          found.size(), out.stream_root, fmt::join(found, ", "));
      // Named here; not also "no stream maps to it".
      for (const auto& d : found) claimed.try_emplace(d, 0);
    }
    out.streams.push_back(std::move(s));
  }
  // Two streams whose names differ only in bytes RabbitMQ replaced map to
  // the same directory: neither can say which it is.
  for (auto& s : out.streams) {
    if (s.dir.empty() || claimed.at(path_basename(s.dir)) < 2) continue;
    s.problem = fmt::format(
        "{} is also the directory of another stream of the definitions (their "
        "names differ only in characters RabbitMQ replaces with _ there)",
        s.dir);
    s.dir.clear();
    s.segments.clear();
  }
  for (const auto& d : dirs) {
    if (!claimed.count(d)) out.unmatched.push_back(d);
  }
  return out;
}

}  // namespace strata::import
