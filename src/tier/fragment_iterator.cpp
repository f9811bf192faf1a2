#include "tier/fragment_iterator.h"

#include <algorithm>

namespace strata::tier {

FragmentIterator::FragmentIterator(std::shared_ptr<const Manifest> root, uint64_t from_offset,
                                   GroupFetch fetch)
    : root_(std::move(root)), fetch_(std::move(fetch)) {
  start(from_offset);
}

void FragmentIterator::start(uint64_t from) {
  frames_.clear();
  cursor_ = std::max(from, root_->first_offset);
  if (cursor_ >= root_->next_offset || root_->entries.empty()) return;
  frames_.push_back(
      Frame{nullptr, &root_->entries, entry_holding(root_->entries, cursor_), root_->next_offset});
}

void FragmentIterator::refresh(std::shared_ptr<const Manifest> newer) {
  root_ = std::move(newer);
  start(cursor_);
}

Result<std::optional<FragmentRef>> FragmentIterator::next() {
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    if (f.index >= f.entries->size()) {
      frames_.pop_back();
      continue;
    }
    const ManifestEntry& e = (*f.entries)[f.index];
    uint64_t end = f.index + 1 < f.entries->size() ? (*f.entries)[f.index + 1].offset : f.bound;
    if (end <= cursor_) {
      f.index += 1;
      continue;
    }
    if (e.kind == kKindFragment) {
      f.index += 1;
      cursor_ = end;
      return std::optional<FragmentRef>(FragmentRef::of(e, end));
    }
    auto g = fetch_group(fetch_, e, end);
    if (!g.ok()) return std::move(g).error();
    group_reads_ += 1;
    f.index += 1;
    std::shared_ptr<const ManifestGroup> group = std::move(*g);
    size_t start_at = entry_holding(group->entries, cursor_);
    const std::vector<ManifestEntry>* entries = &group->entries;
    frames_.push_back(Frame{std::move(group), entries, start_at, end});
  }
  return std::optional<FragmentRef>();
}

Result<std::vector<FragmentRef>> all_fragments(std::shared_ptr<const Manifest> root,
                                               const GroupFetch& fetch) {
  std::vector<FragmentRef> out;
  FragmentIterator it(std::move(root), 0, fetch);
  while (true) {
    STRATA_ASSIGN_OR_RETURN(auto ref, it.next());
    if (!ref) return out;
    out.push_back(*ref);
  }
}

}  // namespace strata::tier
