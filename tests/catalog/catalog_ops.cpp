#include "catalog_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace strata::catalog::ops {

namespace {

std::string result_text(const PutResult& r) {
  switch (r.outcome) {
    case PutOutcome::ok:
      return fmt::format("ok {} {}", r.revision, r.epoch);
    case PutOutcome::conflict:
      return fmt::format("conflict {} {}", r.revision, r.epoch);
    case PutOutcome::fenced:
      return fmt::format("fenced {} {}", r.revision, r.epoch);
    case PutOutcome::not_found:
      return "not_found";
  }
  return "?";
}

std::string stored(const char* what, const StreamEntry& e) {
  return fmt::format("{} {} {}", what, e.revision, e.epoch);
}

}  // namespace

std::string format_op(const Op& op) {
  switch (op.kind) {
    case Op::Kind::create:
      return fmt::format("create {} {}", op.stream, op.epoch);
    case Op::Kind::put:
      return fmt::format("put {} {} {} {}", op.stream, op.root_key, op.epoch, op.expected);
    case Op::Kind::bump_epoch:
      return fmt::format("bump {} {} {}", op.stream, op.expected, op.min_epoch);
    case Op::Kind::remove:
      return fmt::format("remove {} {}", op.stream, op.expected);
  }
  return "?";
}

Result<Op> parse_op(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string kind;
  Op op;
  in >> kind >> op.stream;
  if (kind == "create") {
    op.kind = Op::Kind::create;
    in >> op.epoch;
  } else if (kind == "put") {
    op.kind = Op::Kind::put;
    in >> op.root_key >> op.epoch >> op.expected;
  } else if (kind == "bump") {
    op.kind = Op::Kind::bump_epoch;
    in >> op.expected >> op.min_epoch;
  } else if (kind == "remove") {
    op.kind = Op::Kind::remove;
    in >> op.expected;
  } else {
    return Error(Errc::corrupt, "unknown op: " + std::string(line));
  }
  if (in.fail()) return Error(Errc::corrupt, "malformed op: " + std::string(line));
  return op;
}

std::string random_stream(Random& rng) {
  uint64_t i = rng.uniform(9);
  if (i == 8) return std::string(255, 'L');  // the longest name a catalog holds
  return "s" + std::to_string(i);
}

Op random_op(Random& rng, const std::string& stream, const std::optional<StreamEntry>& cur) {
  Op op;
  op.stream = stream;
  // Root keys of varied length up to the embedded backend's 512 bytes.
  op.root_key = fmt::format("p/{}/meta/root.{:x}", stream.substr(0, 8), rng.next());
  op.root_key.append(size_t(rng.uniform(512 - op.root_key.size() + 1)), 'k');
  const uint64_t r = rng.uniform(100);
  if (!cur) {
    op.epoch = uint64_t(rng.range(1, 3));
    if (r < 45) {
      op.kind = Op::Kind::create;
    } else if (r < 80) {
      op.kind = Op::Kind::put;  // create-if-absent
    } else if (r < 90) {
      op.kind = Op::Kind::put;
      op.expected = uint64_t(rng.range(1, 50));
    } else if (r < 95) {
      op.kind = Op::Kind::bump_epoch;
      op.expected = uint64_t(rng.range(1, 50));
    } else {
      op.kind = Op::Kind::remove;
      op.expected = uint64_t(rng.range(1, 50));
    }
    return op;
  }
  op.expected = cur->revision;
  op.epoch = cur->epoch;
  if (r < 50) {
    op.kind = Op::Kind::put;
    if (rng.chance(1, 6)) op.epoch += 1;  // a new owner's first persist
  } else if (r < 58) {
    op.kind = Op::Kind::put;
    op.expected = cur->revision - 1 - rng.uniform(cur->revision);  // stale (0 = create)
  } else if (r < 66) {
    op.kind = Op::Kind::put;
    if (cur->epoch > 1) op.epoch = cur->epoch - 1;  // a deposed writer
  } else if (r < 78) {
    op.kind = Op::Kind::bump_epoch;
    op.min_epoch = rng.chance(1, 3) ? cur->epoch + uint64_t(rng.range(0, 5)) : 0;
    if (rng.chance(1, 5)) op.expected += 1;
  } else if (r < 88) {
    op.kind = Op::Kind::remove;
    if (rng.chance(1, 4)) op.expected += 1;
  } else {
    op.kind = Op::Kind::create;
  }
  return op;
}

Result<std::string> run_op(Catalog& c, const Op& op) {
  switch (op.kind) {
    case Op::Kind::create: {
      auto e = c.create(op.stream, op.epoch);
      if (!e.ok()) {
        if (e.code() == Errc::already_exists) return std::string("exists");
        return std::move(e).error();
      }
      return stored("ok", *e);
    }
    case Op::Kind::put: {
      STRATA_ASSIGN_OR_RETURN(PutResult r, c.put(op.stream, op.root_key, op.epoch, op.expected));
      return result_text(r);
    }
    case Op::Kind::bump_epoch: {
      STRATA_ASSIGN_OR_RETURN(PutResult r, c.bump_epoch(op.stream, op.expected, op.min_epoch));
      return result_text(r);
    }
    case Op::Kind::remove: {
      STRATA_ASSIGN_OR_RETURN(PutResult r, c.remove(op.stream, op.expected));
      return result_text(r);
    }
  }
  return std::string("?");
}

std::optional<StreamEntry> Model::find(const std::string& stream) const {
  auto it = entries.find(stream);
  if (it == entries.end()) return std::nullopt;
  return it->second;
}

std::string Model::apply(const Op& op) {
  auto it = entries.find(op.stream);
  const bool present = it != entries.end();
  switch (op.kind) {
    case Op::Kind::create: {
      if (present) return "exists";
      StreamEntry e{op.stream, op.epoch, "", floor + 1};
      entries[op.stream] = e;
      return stored("ok", e);
    }
    case Op::Kind::put: {
      if (op.expected == 0) {
        if (present) return stored("conflict", it->second);
        StreamEntry e{op.stream, op.epoch, op.root_key, floor + 1};
        entries[op.stream] = e;
        return stored("ok", e);
      }
      if (!present) return "not_found";
      StreamEntry& e = it->second;
      if (e.epoch > op.epoch) return stored("fenced", e);
      if (e.revision != op.expected) return stored("conflict", e);
      e.root_key = op.root_key;
      e.epoch = op.epoch;
      e.revision += 1;
      return stored("ok", e);
    }
    case Op::Kind::bump_epoch: {
      if (!present) return "not_found";
      StreamEntry& e = it->second;
      if (e.revision != op.expected) return stored("conflict", e);
      e.epoch = std::max(e.epoch + 1, op.min_epoch);
      e.revision += 1;
      return stored("ok", e);
    }
    case Op::Kind::remove: {
      if (!present) return "not_found";
      if (it->second.revision != op.expected) return stored("conflict", it->second);
      floor = std::max(floor, it->second.revision);
      entries.erase(it);
      return "ok 0 0";
    }
  }
  return "?";
}

std::string describe(const std::map<std::string, StreamEntry>& entries) {
  std::string out;
  for (const auto& [name, e] : entries) {
    out += fmt::format("  {} epoch {} revision {} root {}\n",
                       name.size() > 16 ? name.substr(0, 8) + "..." : name, e.epoch, e.revision,
                       e.root_key.substr(0, 40));
  }
  return out.empty() ? "  (empty)\n" : out;
}

}  // namespace strata::catalog::ops
