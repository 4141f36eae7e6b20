// What the allocator-model tests share (test_alloc_*.cc): a model over its own SimDriver with
// every call checked, the sliver case, a hand-built history and random histories.
#pragma once

#include "sim/alloc/allocator.h"
#include "sim/alloc/driver.h"
#include "sim/alloc/history.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace faultline::alloc::testing {

inline constexpr Bytes MiB = kMiB;

inline uint64_t counter_of(const std::vector<std::pair<std::string, uint64_t>>& counters,
                           const std::string& name) {
  for (const auto& [n, value] : counters)
    if (n == name) return value;
  FAIL("no counter named " << name);
  return 0;
}

// One model over its own SimDriver; every malloc and free is followed by the model's check().
struct Harness {
  SimDriver driver;
  std::unique_ptr<Allocator> model;

  explicit Harness(const std::string& name, const Options& options = {}, Bytes capacity = 0)
      : driver(capacity), model(make_allocator(name, options, driver)) {}
  Block malloc(Bytes size, uint64_t stream = 0) {
    const Block b = model->malloc(size, stream);
    model->check();
    return b;
  }
  void free(const Block& b) {
    model->free(b.address);
    model->check();
  }
  void empty_cache() {
    model->empty_cache();
    model->check();
  }
  Bytes reserved() const { return driver.physical_bytes(); }
  const DriverCalls& calls() const { return driver.calls(); }
  uint64_t counter(const std::string& name) const { return counter_of(model->counters(), name); }
};

// Whether two live blocks share no physical byte.
inline bool physically_disjoint(const SimDriver& driver, const Block& a, const Block& b) {
  for (const Fragment& fa : driver.translate(a.address, a.size))
    for (const Fragment& fb : driver.translate(b.address, b.size))
      if (fa.physical < fb.physical + fb.bytes && fb.physical < fa.physical + fa.bytes)
        return false;
  return true;
}

// The sliver case: a 40 MiB block is freed and three blocks of 12, 12 and 16 MiB take its
// place; the first and the last are freed again. 28 MiB are free in two pieces (12 and 16 MiB)
// on either side of the live middle block, which is returned; `first` receives the first block
// (at the start of the 40 MiB segment).
inline Block sliver(Harness& h, Block* first = nullptr) {
  const Block big = h.malloc(40 * MiB);
  h.free(big);
  const Block a = h.malloc(12 * MiB);
  const Block b = h.malloc(12 * MiB);
  const Block c = h.malloc(16 * MiB);
  REQUIRE(a.address == big.address);
  REQUIRE(b.address == big.address + 12 * MiB);
  REQUIRE(c.address == big.address + 24 * MiB);
  h.free(a);
  h.free(c);
  if (first != nullptr) *first = a;
  REQUIRE(h.reserved() == 40 * MiB);
  return b;
}

inline Options stitching_options() {
  Options o;
  o.frag_limit = 4 * MiB;
  return o;
}

// Builds a history by hand: allocations return an id that frees name.
class HistoryBuilder {
public:
  uint64_t alloc(Bytes size, uint64_t stream = 0) {
    const uint64_t id = next_id_++;
    sizes_[id] = size;
    history_.events.push_back({true, id, size, stream, time_++});
    return id;
  }
  void free(uint64_t id) {
    history_.events.push_back({false, id, sizes_.at(id), 0, time_++});
    sizes_.erase(id);
  }
  const History& history() const { return history_; }

private:
  History history_;
  std::map<uint64_t, Bytes> sizes_;
  uint64_t next_id_ = 1;
  Time time_ = 0;
};

// `events` allocations and frees over streams 0, 1 and 2 with sizes log-uniform in
// [1 B, 200 MiB]; an allocation happens with probability 0.55 while the requested bytes live stay
// below `live_cap` (always when nothing is live), otherwise a random live block is freed.
inline History random_history(uint64_t seed, size_t events, Bytes live_cap) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_size(0.0, std::log(200.0 * MiB));
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<uint64_t> stream(0, 2);
  HistoryBuilder h;
  std::vector<std::pair<uint64_t, Bytes>> live;
  Bytes live_bytes = 0;
  for (size_t i = 0; i < events; ++i) {
    if (live.empty() || (coin(rng) < 0.55 && live_bytes < live_cap)) {
      const Bytes size = std::max<Bytes>(1, static_cast<Bytes>(std::exp(log_size(rng))));
      live.push_back({h.alloc(size, stream(rng)), size});
      live_bytes += size;
    } else {
      std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
      const size_t k = pick(rng);
      h.free(live[k].first);
      live_bytes -= live[k].second;
      live[k] = live.back();
      live.pop_back();
    }
  }
  return h.history();
}

} // namespace faultline::alloc::testing
