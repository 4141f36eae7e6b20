// The GPU as a policy's backend keeps it, for policy tests (policy_harness.h): one managed range
// at kBase, block b at kBase + b * 2 MB; the policy's actions applied to chunks, the driver's own
// moves made by hand, and the memory view the policy asks kept true. It checks that no action
// makes the GPU hold more blocks than its capacity.
#pragma once

#include "policy_harness.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fltest {

using faultline::Addr;
using faultline::kBigPageSize;
using faultline::kBlockSize;
namespace policies = faultline::policies;
using policies::ActionKind;

constexpr Addr kBase = Addr{1} << 32; // block b lives at kBase + b * 2 MB

inline policies::Range block(uint64_t b) {
  return {kBase + b * kBlockSize, kBlockSize};
}
// Whether an answer holds an action of `kind` on the range starting at `start`.
inline bool has(const policies::Actions& actions, ActionKind kind, Addr start) {
  return std::any_of(actions.begin(), actions.end(), [&](const policies::Action& a) {
    return a.kind == kind && a.range.start == start;
  });
}
inline Addr page(uint64_t b, unsigned p) {
  return kBase + b * kBlockSize + p * kBigPageSize;
}

struct Gpu {
  PolicyHarness& policy;
  uint64_t capacity;
  std::vector<uint64_t> order;        // blocks held, oldest first
  std::map<uint64_t, uint32_t> pages; // and their big pages

  Gpu(PolicyHarness& p, uint64_t blocks) : policy(p), capacity(blocks) { publish(); }

  // An eviction must name a block held, unless a discard before it in the same answer dropped
  // the block's last pages (the backend then has nothing to write back).
  policies::Actions apply(const policies::Actions& actions) {
    std::set<uint64_t> discarded;
    for (const auto& a : actions) {
      const uint64_t b = (a.range.start - kBase) / kBlockSize;
      const unsigned first = (a.range.start - kBase) % kBlockSize / kBigPageSize;
      const uint32_t mask =
          a.range.bytes >= kBlockSize ? ~0u : ((1u << (a.range.bytes / kBigPageSize)) - 1) << first;
      if (a.kind == ActionKind::kPrefetch) hold(b, mask);
      if (a.kind == ActionKind::kEvict && !(discarded.count(b) && !pages.count(b))) drop(b, mask);
      if (a.kind == ActionKind::kDiscard && pages.count(b)) {
        drop(b, mask);
        discarded.insert(b);
      }
    }
    publish();
    return actions;
  }
  void hold(uint64_t b, uint32_t mask) {
    if (!pages.count(b)) order.push_back(b);
    pages[b] |= mask;
    CHECK(pages.size() <= capacity);
  }
  void drop(uint64_t b, uint32_t mask) {
    REQUIRE(pages.count(b));
    if ((pages[b] &= ~mask)) return;
    pages.erase(b);
    order.erase(std::find(order.begin(), order.end(), b));
  }
  void publish() {
    policy.view.free[0] = (capacity - pages.size()) * kBlockSize;
    policy.view.oldest.clear();
    for (uint64_t b : order) policy.view.oldest.push_back(kBase + b * kBlockSize);
  }
  policies::Actions launch(uint64_t k) { return apply(policy.launch(k, {})); }
  policies::Actions launch(uint64_t k, const std::string& name,
                           const std::vector<policies::Range>& args) {
    return apply(policy.launch_named(k, name, args));
  }
  policies::Actions end(uint64_t k) { return apply(policy.end(k)); }
  // The driver services faults on these pages (evicting its oldest block when full), then
  // hands them to the policy.
  policies::Actions faults(const std::vector<std::pair<uint64_t, unsigned>>& touches) {
    std::vector<Addr> addresses;
    bool evicted = false;
    for (const auto& [b, p] : touches) {
      if (!pages.count(b) && pages.size() == capacity) {
        drop(order.front(), ~0u);
        evicted = true;
      }
      hold(b, 1u << p);
      addresses.push_back(page(b, p));
    }
    publish();
    auto out = apply(policy.fault_batch(addresses));
    if (evicted) apply(policy.pressure());
    return out;
  }
};

} // namespace fltest
