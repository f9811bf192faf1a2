// Drives an UploaderCore in tests: builds cores, sends events at a virtual
// time, and picks effects out of the answers.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "tier/uploader_core.h"

namespace strata::tier::test {

template <class T>
std::vector<T> all_of(const upload::Effects& fx) {
  std::vector<T> out;
  for (const auto& e : fx) {
    if (auto* t = std::get_if<T>(&e)) out.push_back(*t);
  }
  return out;
}
template <class T>
bool has(const upload::Effects& fx) {
  return !all_of<T>(fx).empty();
}
// The single effect of type T (fails the test if there is not exactly one).
template <class T>
T one(const upload::Effects& fx) {
  auto v = all_of<T>(fx);
  EXPECT_EQ(v.size(), 1u) << "expected exactly one effect of the type";
  return v.empty() ? T{} : v.front();
}

inline UploaderConfig test_config() {
  UploaderConfig c;
  c.stream = "s1";
  c.key_prefix = "t";
  c.epoch = 3;
  c.random_seed = 42;
  return c;
}

inline UploaderCore make_core(UploaderConfig cfg, Manifest m = Manifest::empty_at(0),
                              uint64_t revision = 0, std::string root_key = "") {
  auto c = UploaderCore::create(std::move(cfg), std::move(m), revision, std::move(root_key));
  if (!c.ok()) throw std::runtime_error(c.error().to_string());
  return std::move(*c);
}

class Harness {
 public:
  explicit Harness(UploaderConfig cfg = test_config(), Manifest m = Manifest::empty_at(0),
                   uint64_t revision = 0, std::string root_key = "")
      : cfg_(cfg), core(make_core(cfg, std::move(m), revision, std::move(root_key))) {}

  // Sends an event at `now`; the core must accept it.
  upload::Effects on(const upload::Event& e) {
    auto r = core.on(e, now);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    Status inv = core.running() ? core.check_invariants() : Status::OK();
    EXPECT_TRUE(inv.ok()) << inv.to_string();
    return r.ok() ? *r : upload::Effects{};
  }
  Result<upload::Effects> try_on(const upload::Event& e) { return core.on(e, now); }

  // Cuts the next fragment of `records` offsets and `size` bytes.
  upload::SubmitTransfer cut(uint64_t records = 1, uint64_t size = 100) {
    FragmentMeta m{core.next_cut_offset(), core.next_cut_offset() + records, now, now, size, 1};
    auto fx = on(upload::FragmentCut{m});
    return one<upload::SubmitTransfer>(fx);
  }
  upload::Effects complete(const upload::SubmitTransfer& s) {
    return on(upload::TransferComplete{s.ref, s.token});
  }
  upload::Effects fail(const upload::SubmitTransfer& s, TransferFailure f) {
    return on(upload::TransferFailed{s.ref, s.token, std::move(f)});
  }
  // Cuts and completes n fragments in order; returns all effects.
  upload::Effects apply(int n, uint64_t size = 100) {
    upload::Effects all;
    for (int i = 0; i < n; ++i) {
      auto s = cut(1, size);
      auto fx = complete(s);
      all.insert(all.end(), fx.begin(), fx.end());
    }
    return all;
  }
  upload::Effects persist_ok(const upload::StartPersist& p) {
    return on(upload::PersistComplete{p.token, p.expected_revision + 1});
  }

  UploaderConfig cfg_;
  UploaderCore core;
  int64_t now = 0;
};

}  // namespace strata::tier::test
