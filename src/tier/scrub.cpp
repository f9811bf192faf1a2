#include "tier/scrub.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace strata::tier {

std::string_view finding_name(FindingKind k) {
  switch (k) {
    case FindingKind::missing_root:
      return "missing_root";
    case FindingKind::corrupt_root:
      return "corrupt_root";
    case FindingKind::missing_object:
      return "missing_object";
    case FindingKind::corrupt_group:
      return "corrupt_group";
    case FindingKind::size_mismatch:
      return "size_mismatch";
    case FindingKind::crc_mismatch:
      return "crc_mismatch";
    case FindingKind::header_mismatch:
      return "header_mismatch";
    case FindingKind::gap:
      return "gap";
    case FindingKind::overlap:
      return "overlap";
    case FindingKind::unparsable_key:
      return "unparsable_key";
    case FindingKind::orphan:
      return "orphan";
    case FindingKind::unreadable:
      return "unreadable";
  }
  return "unknown";
}

bool is_damage(FindingKind k) {
  return k != FindingKind::orphan && k != FindingKind::unreadable;
}

bool ScrubReport::damaged() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const ScrubFinding& f) { return is_damage(f.kind); });
}

bool ScrubReport::incomplete() const {
  return count(FindingKind::unreadable) > 0;
}

size_t ScrubReport::count(FindingKind k) const {
  return size_t(std::count_if(findings.begin(), findings.end(),
                              [k](const ScrubFinding& f) { return f.kind == k; }));
}

namespace {

struct Builder {
  const ScrubInput& in;
  ScrubReport r;

  void add(FindingKind kind, const std::string& key, std::optional<uint64_t> first,
           std::optional<uint64_t> next, std::string detail) {
    r.findings.push_back(
        ScrubFinding{kind, key, first, next, std::nullopt, std::nullopt, std::move(detail)});
  }

  // The range the fragment's bytes actually hold (its header's, when read).
  std::pair<uint64_t, uint64_t> check_fragment(const TreeLeaf& leaf, const FragmentCheck& c,
                                               const objstore::ObjectInfo* listed) {
    const FragmentRef& f = leaf.ref;
    std::pair<uint64_t, uint64_t> range{f.offset, f.next_offset};
    if (!listed || c.vanished) {
      add(FindingKind::missing_object, leaf.key, f.offset, f.next_offset,
          fmt::format("fragment [{}, {}) is referenced but not in the bucket", f.offset,
                      f.next_offset));
      return range;
    }
    if (!c.read) return range;
    if (!c.read_error.empty()) {
      add(FindingKind::unreadable, leaf.key, f.offset, f.next_offset, c.read_error);
      return range;
    }
    r.headers_checked += 1;
    if (c.header) {
      const FragmentMeta& m = c.header->meta;
      range = {m.first_offset, m.next_offset};
      if (m.first_offset != f.offset || m.next_offset != f.next_offset || m.size != f.size ||
          c.header->epoch != f.epoch) {
        add(FindingKind::header_mismatch, leaf.key, f.offset, f.next_offset,
            fmt::format("the header says [{}, {}) with {} data bytes at epoch {}; the manifest "
                        "entry says [{}, {}) with {} at epoch {}",
                        m.first_offset, m.next_offset, m.size, c.header->epoch, f.offset,
                        f.next_offset, f.size, f.epoch));
      }
      uint64_t want = fragment_object_size(m.size, m.chunk_count);
      if (listed->size != want) {
        r.findings.push_back(ScrubFinding{
            FindingKind::size_mismatch, leaf.key, f.offset, f.next_offset, std::nullopt,
            listed->size,
            fmt::format("listed with {} bytes; its header ({} data bytes, {} chunks) makes it {}",
                        listed->size, m.size, m.chunk_count, want)});
      }
    } else {
      add(FindingKind::crc_mismatch, leaf.key, f.offset, f.next_offset,
          "header: " + c.header_error);
    }
    if (c.whole_checked) {
      if (!c.whole_error.empty()) {
        add(FindingKind::crc_mismatch, leaf.key, f.offset, f.next_offset, c.whole_error);
      } else {
        r.fragments_verified += 1;
      }
    } else if (c.tail_checked && !c.tail_error.empty()) {
      add(FindingKind::crc_mismatch, leaf.key, f.offset, f.next_offset, "index: " + c.tail_error);
    }
    return range;
  }

  void tile(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
            const std::vector<TreeLeaf>& leaves, const Manifest& m) {
    uint64_t cursor = m.first_offset;
    for (size_t i = 0; i < ranges.size(); ++i) {
      auto [first, next] = ranges[i];
      const std::string& key = leaves[i].key;
      if (first > cursor) {
        add(FindingKind::gap, key, cursor, first,
            fmt::format("offsets [{}, {}) are in no fragment", cursor, first));
      } else if (first < cursor && i > 0) {
        add(FindingKind::overlap, key, first, std::min(next, cursor),
            fmt::format("offsets [{}, {}) are also in the previous fragment", first,
                        std::min(next, cursor)));
      }
      cursor = std::max(cursor, next);
    }
    if (!ranges.empty() && cursor < m.next_offset) {
      add(FindingKind::gap, r.root_key, cursor, m.next_offset,
          fmt::format("the fragments end at {} but the manifest's next offset is {}", cursor,
                      m.next_offset));
    }
  }

  void run(const ObjectKeys& keys) {
    r.stream = in.stream;
    r.objects_listed = in.listing.size();
    std::map<std::string, const objstore::ObjectInfo*> listed;
    for (const auto& o : in.listing) listed.emplace(o.key, &o);
    std::set<std::string> referenced;
    if (in.entry) {
      r.in_catalog = true;
      r.epoch = in.entry->epoch;
      r.revision = in.entry->revision;
      r.root_key = in.entry->root_key;
    }
    if (!r.root_key.empty()) {
      referenced.insert(r.root_key);
      root(listed, referenced);
    }
    r.referenced.assign(referenced.begin(), referenced.end());
    for (const auto& o : in.listing) {
      if (referenced.count(o.key)) continue;
      auto parsed = keys.parse(o.key);
      if (!parsed.ok()) {
        add(FindingKind::unparsable_key, o.key, std::nullopt, std::nullopt, parsed.error().message);
        continue;
      }
      std::optional<int64_t> age;
      if (o.last_modified_ms) age = in.now_ms - *o.last_modified_ms;
      std::optional<uint64_t> first;
      if (parsed->type != ObjectType::root) first = parsed->first_offset;
      r.findings.push_back(ScrubFinding{FindingKind::orphan, o.key, first, std::nullopt, age,
                                        o.size, "referenced by no manifest"});
    }
  }

  void root(const std::map<std::string, const objstore::ObjectInfo*>& listed,
            std::set<std::string>& referenced) {
    const RootRead& rr = in.root;
    switch (rr.state) {
      case ReadState::missing:
        return add(FindingKind::missing_root, r.root_key, std::nullopt, std::nullopt,
                   fmt::format("catalog revision {} names it: {}", r.revision, rr.error));
      case ReadState::corrupt:
        return add(FindingKind::corrupt_root, r.root_key, std::nullopt, std::nullopt, rr.error);
      case ReadState::unreadable:
        return add(FindingKind::unreadable, r.root_key, std::nullopt, std::nullopt, rr.error);
      case ReadState::ok:
        break;
    }
    const Manifest& m = rr.manifest;
    r.manifest = m;
    r.first_offset = m.first_offset;
    r.next_offset = m.next_offset;
    for (const auto& g : in.walk.groups) referenced.insert(g.key);
    r.groups = in.walk.groups.size();
    r.findings.insert(r.findings.end(), in.walk.problems.begin(), in.walk.problems.end());
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    static const FragmentCheck kNotRead;
    for (size_t i = 0; i < in.walk.leaves.size(); ++i) {
      const TreeLeaf& leaf = in.walk.leaves[i];
      if (!leaf.known) {
        // A group that could not be used: assume it holds its range.
        ranges.emplace_back(leaf.ref.offset, leaf.ref.next_offset);
        continue;
      }
      referenced.insert(leaf.key);
      r.fragments += 1;
      r.fragment_bytes += leaf.ref.size;
      auto it = listed.find(leaf.key);
      const FragmentCheck& c = i < in.checks.size() ? in.checks[i] : kNotRead;
      ranges.push_back(check_fragment(leaf, c, it == listed.end() ? nullptr : it->second));
    }
    tile(ranges, in.walk.leaves, m);
  }
};

}  // namespace

ScrubReport scrub_report(const ScrubInput& in, const ObjectKeys& keys) {
  Builder b{in, {}};
  b.run(keys);
  return std::move(b.r);
}

}  // namespace strata::tier
