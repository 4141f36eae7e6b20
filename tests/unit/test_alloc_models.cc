// The allocator models (sim/alloc/): hand-built alloc/free sequences whose outcomes follow from
// the rules of PyTorch's caching allocator, its expandable segments and GMLake's stitching
// (GMLake, ASPLOS '24, as glake @ 0274a9c implements it; PyTorch's CUDACachingAllocator.cpp and its
// Note [Expandable Segments]), random sequences replayed with every
// invariant checked, the model registry and the strict alloc config reader.
#include "sim/alloc/allocator.h"
#include "sim/alloc/driver.h"
#include "sim/alloc/history.h"
#include "sim/alloc/replay.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace faultline;
using namespace faultline::alloc;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr Bytes MiB = kMiB;

uint64_t counter_of(const std::vector<std::pair<std::string, uint64_t>>& counters,
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
bool physically_disjoint(const SimDriver& driver, const Block& a, const Block& b) {
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
Block sliver(Harness& h, Block* first = nullptr) {
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

Options stitching_options() {
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
History random_history(uint64_t seed, size_t events, Bytes live_cap) {
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

} // namespace

// ---------------------------------------------------------------------------------------------
// PyTorch's caching allocator

TEST_CASE("alloc caching: a small request takes 512 B of a 2 MiB small-pool segment", "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(100);
  CHECK(a.address != 0);
  CHECK(a.size == 512);
  CHECK(h.calls().malloc == 1);
  CHECK(h.reserved() == 2 * MiB);
  // Further small requests split the same segment.
  const Block b = h.malloc(1000);
  CHECK(b.address == a.address + 512);
  CHECK(b.size == 1024);
  const Block c = h.malloc(1 * MiB); // exactly 1 MiB is still small
  CHECK(c.address == a.address + 1536);
  CHECK(c.size == 1 * MiB);
  CHECK(h.calls().malloc == 1);
  // Just over 1 MiB goes to the large pool: a 20 MiB segment.
  const Block d = h.malloc(1 * MiB + 1);
  CHECK(d.size == 1 * MiB + 512);
  CHECK(h.calls().malloc == 2);
  CHECK(h.reserved() == 22 * MiB);
}

TEST_CASE("alloc caching: a request below 10 MiB gets a 20 MiB segment that later ones split",
          "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(5 * MiB);
  CHECK(a.size == 5 * MiB);
  CHECK(h.reserved() == 20 * MiB);
  CHECK(h.calls().malloc == 1);
  CHECK(h.counter("splits") == 1); // 5 MiB used + 15 MiB free
  const Block b = h.malloc(5 * MiB);
  CHECK(b.address == a.address + 5 * MiB);
  CHECK(b.size == 5 * MiB);
  CHECK(h.calls().malloc == 1);
  CHECK(h.reserved() == 20 * MiB);
  CHECK(h.counter("segments_created") == 1);
}

TEST_CASE("alloc caching: a request of 10 MiB or more gets a segment of its size in 2 MiB",
          "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(12 * MiB);
  CHECK(a.size == 12 * MiB);
  CHECK(h.reserved() == 12 * MiB);
  // 11 MiB + 1 B rounds to 11 MiB + 512 B, the segment to 12 MiB; the 1 MiB - 512 B left over
  // (not over 1 MiB) stay with the block.
  const Block b = h.malloc(11 * MiB + 1);
  CHECK(b.size == 12 * MiB);
  CHECK(h.reserved() == 24 * MiB);
  CHECK(h.calls().malloc == 2);
  CHECK(h.counter("splits") == 0);
}

TEST_CASE("alloc caching: the best-fitting free block serves a request, not the first", "[alloc]") {
  Harness h("caching");
  const Block b16 = h.malloc(16 * MiB);
  const Block b12 = h.malloc(12 * MiB);
  const Block b14 = h.malloc(14 * MiB);
  h.free(b16);
  h.free(b12);
  h.free(b14);
  CHECK(h.reserved() == 42 * MiB);
  // The 1 MiB left over in each case is not split off (large pool: only more than 1 MiB).
  const Block x = h.malloc(13 * MiB);
  CHECK(x.address == b14.address);
  CHECK(x.size == 14 * MiB);
  const Block y = h.malloc(11 * MiB);
  CHECK(y.address == b12.address);
  CHECK(y.size == 12 * MiB);
  const Block z = h.malloc(15 * MiB);
  CHECK(z.address == b16.address);
  CHECK(z.size == 16 * MiB);
  CHECK(h.calls().malloc == 3);
}

TEST_CASE("alloc caching: a freed block merges with its free neighbours", "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(5 * MiB);
  const Block b = h.malloc(5 * MiB);
  const Block c = h.malloc(5 * MiB); // 5 MiB of the 20 MiB segment remain free after c
  h.free(b);
  // b's 5 MiB hole and the 5 MiB tail are not adjacent: 10 MiB needs a new segment.
  const Block d = h.malloc(10 * MiB);
  CHECK(h.calls().malloc == 2);
  h.free(d);
  h.free(a);
  h.free(c);
  // a, b, c and the tail merged into the whole segment.
  const Block whole = h.malloc(20 * MiB);
  CHECK(whole.address == a.address);
  CHECK(whole.size == 20 * MiB);
  CHECK(h.calls().malloc == 2);
}

TEST_CASE("alloc caching: free blocks are reused only on their own stream", "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(5 * MiB, 1);
  h.free(a);
  const Block b = h.malloc(5 * MiB, 2);
  CHECK(b.address != a.address);
  CHECK(h.calls().malloc == 2);
  CHECK(h.reserved() == 40 * MiB);
  const Block c = h.malloc(5 * MiB, 1);
  CHECK(c.address == a.address);
  CHECK(h.calls().malloc == 2);
}

TEST_CASE("alloc caching: a large-pool remainder of at most 1 MiB is not split off", "[alloc]") {
  Harness h("caching");
  const Block seed = h.malloc(5 * MiB);
  h.free(seed); // a cached 20 MiB block
  const Block a = h.malloc(19 * MiB + 512 * 1024);
  CHECK(a.address == seed.address);
  CHECK(a.size == 20 * MiB);
  h.free(a);
  const Block b = h.malloc(19 * MiB); // exactly 1 MiB left: still not split
  CHECK(b.size == 20 * MiB);
  h.free(b);
  const Block c = h.malloc(18 * MiB + 512 * 1024); // 1.5 MiB left: split
  CHECK(c.size == 18 * MiB + 512 * 1024);
  CHECK(h.calls().malloc == 1);
  CHECK(h.counter("splits") == 2);
}

TEST_CASE("alloc caching: max_split_size keeps oversize blocks whole and for oversize requests",
          "[alloc]") {
  Options o;
  o.max_split_size = 32 * MiB;
  Harness h("caching", o);
  const Block a = h.malloc(64 * MiB);
  CHECK(a.size == 64 * MiB);
  h.free(a); // a cached oversize block
  // A request below max_split_size does not take an oversize block.
  const Block b = h.malloc(5 * MiB);
  CHECK(b.address != a.address);
  CHECK(b.size == 5 * MiB);
  CHECK(h.calls().malloc == 2);
  // An oversize request takes it when less than 20 MiB would be wasted, and does not split it.
  const Block c = h.malloc(50 * MiB);
  CHECK(c.address == a.address);
  CHECK(c.size == 64 * MiB);
  CHECK(h.calls().malloc == 2);
  h.free(c);
  // 64 MiB for 40 MiB wastes 24 MiB: a new segment.
  const Block d = h.malloc(40 * MiB);
  CHECK(d.address != a.address);
  CHECK(d.size == 40 * MiB);
  CHECK(h.calls().malloc == 3);
}

// PyTorch's release_available_cached_blocks (c10/cuda/CUDACachingAllocator.cpp), the step between
// a refused cudaMalloc and releasing the whole cache. PyTorch requires max_split_size_mb > 20.
TEST_CASE("alloc caching: out of memory first frees oversize cached segments of the stream",
          "[alloc]") {
  Options o;
  o.max_split_size = 32 * MiB;
  SECTION("the smallest segment of at least max(request, max_split_size) when there is one") {
    Harness h("caching", o, 160 * MiB);
    const Block a = h.malloc(80 * MiB);
    const Block b = h.malloc(40 * MiB);
    h.malloc(36 * MiB);
    CHECK(h.reserved() == 156 * MiB);
    h.free(a);
    h.free(b);
    // 5 MiB takes no oversize block and needs a 20 MiB segment: b's 40 MiB goes back, not a's.
    const Block x = h.malloc(5 * MiB);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 1);
    CHECK(h.reserved() == 136 * MiB);
    CHECK(h.counter("cache_releases") == 0);
    const Block y = h.malloc(70 * MiB); // a's segment is still cached
    CHECK(y.address == a.address);
  }
  SECTION("else oversize segments from the largest down") {
    Harness h("caching", o, 160 * MiB);
    const Block a = h.malloc(36 * MiB);
    const Block b = h.malloc(34 * MiB);
    h.malloc(80 * MiB);
    h.free(a);
    h.free(b);
    const Block x = h.malloc(60 * MiB);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 2);
    CHECK(h.reserved() == 140 * MiB);
    CHECK(h.counter("cache_releases") == 0);
  }
  SECTION("not enough oversize segments: the whole cache is released") {
    Harness h("caching", o, 100 * MiB);
    h.malloc(40 * MiB);
    const Block a = h.malloc(34 * MiB);
    const Block s = h.malloc(20 * MiB); // cached below max_split_size: only the full release
    h.free(a);
    h.free(s);
    const Block x = h.malloc(60 * MiB);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 2);
    CHECK(h.reserved() == 100 * MiB);
    CHECK(h.counter("cache_releases") == 1);
  }
  SECTION("oversize segments of other streams wait for the full release") {
    Harness h("caching", o, 160 * MiB);
    const Block a = h.malloc(40 * MiB, 1);
    h.malloc(100 * MiB, 0);
    h.free(a);
    const Block x = h.malloc(30 * MiB, 0);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 1);
    CHECK(h.reserved() == 130 * MiB);
    CHECK(h.counter("cache_releases") == 1);
  }
}

TEST_CASE("alloc caching: out of memory releases the cache, then reports failure", "[alloc]") {
  Harness h("caching", {}, 40 * MiB);
  const Block a = h.malloc(20 * MiB);
  const Block b = h.malloc(20 * MiB);
  CHECK(h.reserved() == 40 * MiB);
  const Block refused = h.malloc(20 * MiB);
  CHECK(refused.address == 0);
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.counter("cache_releases") == 1);

  // A cached segment of another stream cannot serve; releasing it makes room.
  h.free(a);
  const Block d = h.malloc(20 * MiB, 1);
  REQUIRE(d.address != 0);
  CHECK(h.calls().free == 1);
  CHECK(h.reserved() == 40 * MiB);

  // A request larger than any cached segment: both are released, then it fits.
  h.free(b);
  h.free(d);
  const Block e = h.malloc(30 * MiB);
  REQUIRE(e.address != 0);
  CHECK(e.size == 30 * MiB);
  CHECK(h.calls().free == 3);
  CHECK(h.reserved() == 30 * MiB);

  // Nothing cached, nothing to release: address 0.
  const Block f = h.malloc(20 * MiB);
  CHECK(f.address == 0);
  CHECK(f.size == 0);
  CHECK(h.reserved() == 30 * MiB);
  h.free(e);
  h.empty_cache();
  CHECK(h.reserved() == 0);
}

// ---------------------------------------------------------------------------------------------
// Expandable segments

TEST_CASE("alloc expandable: one segment per pool and stream, mapped in 20 MiB large pages",
          "[alloc]") {
  Harness h("expandable");
  const Block a = h.malloc(30 * MiB);
  CHECK(a.size == 30 * MiB);
  CHECK(h.reserved() == 40 * MiB); // two 20 MiB pages
  CHECK(h.calls().reserve == 1);
  CHECK(h.calls().create == 2);
  CHECK(h.calls().map == 2);
  CHECK(h.calls().malloc == 0);
  // The mapped tail serves 10 MiB without a new page.
  const Block b = h.malloc(10 * MiB);
  CHECK(b.address == a.address + 30 * MiB);
  CHECK(h.calls().map == 2);
  CHECK(h.reserved() == 40 * MiB);
  // The segment grows in place.
  const Block c = h.malloc(30 * MiB);
  CHECK(c.address == a.address + 40 * MiB);
  CHECK(h.calls().reserve == 1);
  CHECK(h.calls().map == 4);
  CHECK(h.reserved() == 80 * MiB);
  // Another stream, another segment; the small pool has its own, with 2 MiB pages.
  const Block d = h.malloc(30 * MiB, 1);
  CHECK(h.calls().reserve == 2);
  CHECK(h.reserved() == 120 * MiB);
  const Block s = h.malloc(100);
  CHECK(s.size == 512);
  CHECK(h.calls().reserve == 3);
  CHECK(h.reserved() == 122 * MiB);
  const Block t = h.malloc(100);
  CHECK(t.address == s.address + 512);
  CHECK(h.calls().reserve == 3);

  for (const Block& x : {a, b, c, d, s, t}) h.free(x);
  CHECK(h.reserved() == 122 * MiB); // cached
  h.empty_cache();
  CHECK(h.reserved() == 0);
  CHECK(h.calls().unmap == h.calls().map);
  CHECK(h.calls().release == h.calls().create);
  CHECK(h.calls().unreserve == h.calls().reserve);
}

TEST_CASE("alloc expandable: pages are mapped at the lowest address that fits", "[alloc]") {
  Harness h("expandable");
  const Block a = h.malloc(20 * MiB);
  const Block b = h.malloc(20 * MiB);
  const Block c = h.malloc(20 * MiB);
  CHECK(b.address == a.address + 20 * MiB);
  CHECK(c.address == a.address + 40 * MiB);
  h.free(b);
  h.empty_cache(); // unmaps b's page: a 20 MiB hole
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.calls().unmap == 1);
  // 30 MiB does not fit the hole: two pages after c.
  const Block d = h.malloc(30 * MiB);
  CHECK(d.address == a.address + 60 * MiB);
  CHECK(h.reserved() == 80 * MiB);
  // 20 MiB fits the hole, the lowest address (not the 10 MiB free after d plus a page).
  const Block e = h.malloc(20 * MiB);
  CHECK(e.address == a.address + 20 * MiB);
  CHECK(h.reserved() == 100 * MiB);
  CHECK(h.calls().reserve == 1);
}

TEST_CASE("alloc expandable: out of memory unmaps free pages so they can be mapped elsewhere",
          "[alloc]") {
  Harness h("expandable", {}, 60 * MiB);
  const Block a = h.malloc(20 * MiB);
  const Block b = h.malloc(20 * MiB);
  h.free(a);
  // Stream 1 needs two pages; only one is left until a's page is unmapped.
  const Block c = h.malloc(40 * MiB, 1);
  REQUIRE(c.address != 0);
  CHECK(h.reserved() == 60 * MiB);
  CHECK(h.counter("cache_releases") == 1);
  // Nothing free to unmap now.
  const Block d = h.malloc(20 * MiB);
  CHECK(d.address == 0);
  CHECK(h.reserved() == 60 * MiB);
  h.free(b);
  h.free(c);
  h.empty_cache();
  CHECK(h.reserved() == 0);
  CHECK(h.calls().unreserve == h.calls().reserve);
}

// ---------------------------------------------------------------------------------------------
// GMLake

TEST_CASE("alloc gmlake: requests over 1 MiB round up to 2 MiB chunks", "[alloc]") {
  Harness h("gmlake");
  const Block a = h.malloc(3 * MiB);
  CHECK(a.size == 4 * MiB);
  CHECK(h.reserved() == 20 * MiB); // a 20 MiB segment, as PyTorch's below 10 MiB
  CHECK(h.calls().reserve == 1);
  CHECK(h.calls().create == 10);
  CHECK(h.calls().map == 10);
  CHECK(h.calls().malloc == 0);
  const Block b = h.malloc(1 * MiB + 1);
  CHECK(b.address == a.address + 4 * MiB);
  CHECK(b.size == 2 * MiB);
  // 1 MiB is the small pool's: PyTorch's cudaMalloc'd 2 MiB segment.
  const Block c = h.malloc(1 * MiB);
  CHECK(c.size == 1 * MiB);
  CHECK(h.calls().malloc == 1);
  CHECK(h.reserved() == 22 * MiB);
  // 12 MiB + 1 B is 7 chunks: the 7 free chunks left of the first segment.
  const Block d = h.malloc(12 * MiB + 1);
  CHECK(d.address == a.address + 6 * MiB);
  CHECK(d.size == 14 * MiB);
  CHECK(h.reserved() == 22 * MiB);
  // 14 MiB more: a segment of exactly 7 chunks.
  const Block e = h.malloc(14 * MiB);
  CHECK(e.size == 14 * MiB);
  CHECK(h.reserved() == 36 * MiB);
  CHECK(h.counter("segments_created") == 2);
}

TEST_CASE("alloc gmlake: the sliver case needs a new segment without stitching", "[alloc]") {
  SECTION("caching") {
    Harness h("caching");
    sliver(h);
    const Block x = h.malloc(26 * MiB);
    CHECK(x.size == 26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.calls().malloc == 2);
  }
  SECTION("expandable: the free block before the unmapped tail grows by a page") {
    Harness h("expandable");
    Block first;
    sliver(h, &first);
    const Block x = h.malloc(26 * MiB);
    CHECK(x.address == first.address + 24 * MiB);
    CHECK(h.reserved() == 60 * MiB);
  }
  SECTION("gmlake below frag_limit (default 512 MiB)") {
    Harness h("gmlake");
    sliver(h);
    const Block x = h.malloc(26 * MiB);
    CHECK(x.size == 26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
  SECTION("gmlake with a request just below frag_limit") {
    Options o;
    o.frag_limit = 28 * MiB;
    Harness h("gmlake", o);
    sliver(h);
    h.malloc(26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
}

TEST_CASE("alloc gmlake: the sliver case stitches two free runs into one block", "[alloc]") {
  Harness h("gmlake", stitching_options());
  Block a;
  const Block b = sliver(h, &a);
  const DriverCalls before = h.calls();
  const Block s = h.malloc(26 * MiB); // 13 chunks; the free runs hold 8 and 6
  REQUIRE(s.address != 0);
  CHECK(s.size == 26 * MiB);
  CHECK(h.reserved() == 40 * MiB); // no new physical memory
  CHECK(h.counter("stitches") == 1);
  CHECK(h.calls().reserve == before.reserve + 1);
  CHECK(h.calls().map == before.map + 13);
  CHECK(h.calls().create == before.create);
  // Largest run first: the 16 MiB run (chunks 12..19), then 10 MiB of the 12 MiB run.
  const auto head = h.driver.translate(s.address, 16 * MiB);
  const auto tail = h.driver.translate(s.address + 16 * MiB, 10 * MiB);
  REQUIRE(head.size() == 1);
  REQUIRE(tail.size() == 1);
  CHECK(head[0].physical == h.driver.translate(a.address + 24 * MiB, 16 * MiB).at(0).physical);
  CHECK(tail[0].physical == h.driver.translate(a.address, 10 * MiB).at(0).physical);
  CHECK(physically_disjoint(h.driver, s, b));
  // The one chunk left (chunk 5) goes to the next 2 MiB request, shared with nobody live.
  const Block x = h.malloc(2 * MiB);
  CHECK(x.address == a.address + 10 * MiB);
  CHECK(physically_disjoint(h.driver, x, s));
  CHECK(physically_disjoint(h.driver, x, b));
  CHECK(h.reserved() == 40 * MiB);
  // Everything is in use now: another chunk needs a new segment.
  const Block y = h.malloc(2 * MiB);
  CHECK(h.reserved() == 60 * MiB);
  for (const Block& other : {s, b, x}) CHECK(physically_disjoint(h.driver, y, other));

  // Freed, the stitched block serves the same request again from the stitched pool.
  h.free(x);
  h.free(s);
  const DriverCalls cached = h.calls();
  const Block r = h.malloc(26 * MiB);
  CHECK(r.address == s.address);
  CHECK(r.size == 26 * MiB);
  CHECK(h.counter("stitch_reuses") == 1);
  CHECK(h.counter("stitches") == 1);
  CHECK(h.calls().reserve == cached.reserve);
  CHECK(h.calls().map == cached.map);

  // Everything freed and the cache emptied: nothing is left reserved or mapped.
  h.free(r);
  h.free(b);
  h.free(y);
  h.empty_cache();
  CHECK(h.reserved() == 0);
  CHECK(h.calls().unmap == h.calls().map);
  CHECK(h.calls().release == h.calls().create);
  CHECK(h.calls().unreserve == h.calls().reserve);
  CHECK(h.counter("stitched_dropped") == 1);
}

TEST_CASE("alloc gmlake: a stitched block is reused for a smaller request within reuse_limit",
          "[alloc]") {
  for (const uint64_t reuse_limit : {uint64_t{10}, uint64_t{1}}) {
    INFO("reuse_limit " << reuse_limit);
    Options o = stitching_options();
    o.reuse_limit = reuse_limit;
    Harness h("gmlake", o);
    const Block b = sliver(h);
    const Block s = h.malloc(26 * MiB); // 13 chunks
    h.free(s);
    const Block r = h.malloc(20 * MiB); // 10 chunks: 13 <= 10 * 10, but not <= 10 * 1
    REQUIRE(r.address != 0);
    CHECK(r.size == 20 * MiB);
    CHECK(h.reserved() == 40 * MiB);
    CHECK(physically_disjoint(h.driver, r, b));
    if (reuse_limit == 10) {
      CHECK(r.address == s.address);
      CHECK(h.counter("stitch_reuses") == 1);
      CHECK(h.counter("stitches") == 1);
    } else {
      CHECK(r.address != s.address);
      CHECK(h.counter("stitch_reuses") == 0);
      CHECK(h.counter("stitches") == 2);
    }
    h.free(r);
    h.free(b);
    h.empty_cache();
    CHECK(h.reserved() == 0);
  }
}

TEST_CASE("alloc gmlake: a stitched block is not reused while another block uses its chunks",
          "[alloc]") {
  Harness h("gmlake", stitching_options());
  Block a;
  const Block b = sliver(h, &a);
  const Block s = h.malloc(26 * MiB);
  h.free(s);
  // The primitive pool comes first: 12 MiB is the 6-chunk run 0..5, which s maps too.
  const Block p = h.malloc(12 * MiB);
  CHECK(p.address == a.address);
  CHECK(physically_disjoint(h.driver, p, b));
  // 16 MiB: the 8-chunk run 12..19, the rest of s's chunks.
  const Block q = h.malloc(16 * MiB);
  CHECK(q.address == a.address + 24 * MiB);
  CHECK(h.counter("stitch_reuses") == 0);
  // 26 MiB now: no chunk is free and s is not reusable (its chunks are p's and q's): a new
  // segment.
  const Block r = h.malloc(26 * MiB);
  CHECK(r.address != s.address);
  CHECK(h.reserved() == 66 * MiB);
  for (const Block& x : {p, q, b}) CHECK(physically_disjoint(h.driver, r, x));
  CHECK(physically_disjoint(h.driver, p, q));
}

TEST_CASE("alloc gmlake: defrag_level 1 stitches only after a new segment was refused", "[alloc]") {
  Options o = stitching_options();
  o.defrag_level = 1;
  SECTION("unlimited: a new segment") {
    Harness h("gmlake", o);
    sliver(h);
    h.malloc(26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
  SECTION("at capacity: a stitch") {
    Harness h("gmlake", o, 40 * MiB);
    const Block b = sliver(h);
    const Block s = h.malloc(26 * MiB);
    REQUIRE(s.address != 0);
    CHECK(h.reserved() == 40 * MiB);
    CHECK(h.counter("stitches") == 1);
    CHECK(physically_disjoint(h.driver, s, b));
  }
}

// GMLake's malloc: get_free_block || stitch(time 0) || realloc_block || (release_available &&
// realloc_block) || stitch(time 1) || (release_cached_blocks && realloc_block) || stitch(time 2);
// stitch(time) runs when defragLevel <= time.
TEST_CASE("alloc gmlake: defrag_level 1 stitches before the cached segments are released",
          "[alloc]") {
  Options o = stitching_options();
  o.defrag_level = 1;
  Harness h("gmlake", o, 40 * MiB);
  const Block a = h.malloc(20 * MiB); // segment 1: 10 chunks
  const Block b = h.malloc(20 * MiB); // segment 2: 10 chunks
  h.free(b);
  const Block c = h.malloc(4 * MiB); // chunks 0..1 of segment 2
  h.free(a);                         // segment 1 is idle: 10 free chunks, segment 2 has 8
  // 15 chunks: no new segment fits; stitching the 18 free chunks does. Releasing the idle segment
  // first would leave 8 free chunks and room for 10 new ones: out of memory.
  const Block x = h.malloc(30 * MiB);
  REQUIRE(x.address != 0);
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.counter("stitches") == 1);
  CHECK(h.counter("segments_released") == 0);
  CHECK(physically_disjoint(h.driver, x, c));
}

TEST_CASE("alloc gmlake: defrag_level 2 stitches once the cache is released", "[alloc]") {
  Options o = stitching_options();
  o.defrag_level = 2;
  Harness h("gmlake", o, 40 * MiB);
  const Block x1 = h.malloc(20 * MiB);
  const Block x2 = h.malloc(20 * MiB);
  h.free(x1);
  const Block p = h.malloc(10 * MiB); // segment 1, chunks 0..4
  h.free(x2);
  const Block q = h.malloc(12 * MiB); // segment 2, chunks 0..5
  // 9 chunks: 5 free in segment 1 and 4 in segment 2, no idle segment, no room for new ones.
  const Block y = h.malloc(18 * MiB);
  REQUIRE(y.address != 0);
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.counter("stitches") == 1);
  CHECK(physically_disjoint(h.driver, y, p));
  CHECK(physically_disjoint(h.driver, y, q));
}

TEST_CASE("alloc gmlake: realloc_missing creates only the chunks the free runs lack", "[alloc]") {
  Options o = stitching_options();
  SECTION("off: a whole new segment") {
    Harness h("gmlake", o);
    sliver(h);
    h.malloc(60 * MiB);
    CHECK(h.reserved() == 100 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
  SECTION("on: 16 new chunks stitched with the 14 free ones") {
    o.realloc_missing = true;
    Harness h("gmlake", o);
    const Block b = sliver(h);
    const Block s = h.malloc(60 * MiB); // 30 chunks
    REQUIRE(s.address != 0);
    CHECK(s.size == 60 * MiB);
    CHECK(h.reserved() == 72 * MiB);
    CHECK(h.counter("stitches") == 1);
    CHECK(h.counter("segments_created") == 2);
    CHECK(physically_disjoint(h.driver, s, b));
  }
}

TEST_CASE("alloc gmlake: out of memory releases idle segments, then reports failure", "[alloc]") {
  Harness h("gmlake", {}, 40 * MiB);
  const Block a = h.malloc(40 * MiB);
  h.free(a);
  // Stream 1 cannot use stream 0's free chunks; they go back to the driver.
  const Block b = h.malloc(30 * MiB, 1);
  REQUIRE(b.address != 0);
  CHECK(h.reserved() == 30 * MiB);
  CHECK(h.counter("segments_released") == 1);
  const Block c = h.malloc(20 * MiB);
  CHECK(c.address == 0);
  CHECK(h.reserved() == 30 * MiB);
  h.free(b);
  h.empty_cache();
  CHECK(h.reserved() == 0);
}

TEST_CASE("alloc: freeing an address that is not a live block throws", "[alloc]") {
  for (const std::string name : {"caching", "expandable", "gmlake"}) {
    INFO(name);
    Harness h(name);
    const Block small = h.malloc(100);
    const Block large = h.malloc(30 * MiB);
    CHECK_THROWS_AS(h.model->free(small.address + 512), SimulationError);
    CHECK_THROWS_AS(h.model->free(large.address + 2 * MiB), SimulationError);
    h.free(large);
    CHECK_THROWS_AS(h.model->free(large.address), SimulationError); // twice
    h.free(small);
  }
}

// ---------------------------------------------------------------------------------------------
// Replay

TEST_CASE("alloc replay: the sliver history reserves 66, 60 and 40 MiB", "[alloc]") {
  HistoryBuilder hb;
  const uint64_t big = hb.alloc(40 * MiB);
  hb.free(big);
  const uint64_t a = hb.alloc(12 * MiB);
  const uint64_t b = hb.alloc(12 * MiB);
  const uint64_t c = hb.alloc(16 * MiB);
  hb.free(a);
  hb.free(c);
  hb.alloc(26 * MiB); // left live: replay frees it at the end
  (void)b;
  ReplayConfig config;
  config.options = stitching_options();
  config.check_invariants = true;
  const std::map<std::string, Bytes> expected = {
      {"caching", 66 * MiB}, {"expandable", 60 * MiB}, {"gmlake", 40 * MiB}};
  for (const auto& [name, peak_reserved] : expected) {
    INFO(name);
    const ModelResult r = replay(hb.history(), name, config);
    CHECK(r.completed);
    CHECK(r.usage.peak_allocated == 40 * MiB);
    CHECK(r.usage.peak_requested == 40 * MiB);
    CHECK(r.usage.peak_reserved == peak_reserved);
    CHECK(r.usage.mallocs == 5);
    CHECK(r.usage.frees == 3);
    CHECK(r.reserved_after_empty_cache == 0);
  }
}

TEST_CASE("alloc replay: an out-of-memory stops the replay at its event", "[alloc]") {
  HistoryBuilder hb;
  hb.alloc(30 * MiB);
  hb.alloc(30 * MiB);
  hb.alloc(1 * MiB);
  ReplayConfig config;
  config.capacity = 40 * MiB;
  config.check_invariants = true;
  for (const std::string name : {"caching", "expandable", "gmlake"}) {
    INFO(name);
    const ModelResult r = replay(hb.history(), name, config);
    CHECK_FALSE(r.completed);
    CHECK(r.oom_at_event == 1);
    CHECK(r.usage.ooms == 1);
    CHECK(r.reserved_after_empty_cache == 0);
  }
}

TEST_CASE("alloc replay: random sequences keep every invariant", "[alloc]") {
  struct Variant {
    std::string allocator;
    std::string label;
    Options options;
  };
  std::vector<Variant> variants = {{"caching", "defaults", {}}, {"gmlake", "defaults", {}}};
  {
    // check() visits every page of a segment: 8 GiB of VA instead of 160 keeps it quick; 1 GiB
    // makes streams need several segments.
    Options o;
    o.segment_va = Bytes{8} << 30;
    variants.push_back({"expandable", "segment_va 8 GiB", o});
    o.segment_va = Bytes{1} << 30;
    variants.push_back({"expandable", "segment_va 1 GiB", o});
    o = {};
    o.max_split_size = 64 * MiB;
    variants.push_back({"caching", "max_split_size 64 MiB", o});
    o.segment_va = Bytes{8} << 30;
    variants.push_back({"expandable", "max_split_size 64 MiB", o});
  }
  {
    Options o;
    o.frag_limit = 4 * MiB;
    o.auto_gc = 256 * MiB;
    variants.push_back({"gmlake", "frag_limit 4 MiB, auto_gc 256 MiB", o});
    o.reuse_limit = 1;
    o.realloc_missing = true;
    variants.push_back({"gmlake", "reuse_limit 1, realloc_missing", o});
    o.reuse_limit = 10;
    o.realloc_missing = false;
    o.defrag_level = 1;
    variants.push_back({"gmlake", "defrag_level 1", o});
  }
  struct Load {
    Bytes capacity;
    Bytes live_cap;
  };
  // Unlimited, and 1 GiB with up to about 760 MiB requested live: some runs complete, others end
  // in an out-of-memory after releasing their cache several times.
  for (const Load load : {Load{0, 4096 * MiB}, Load{1024 * MiB, 560 * MiB}}) {
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      const History history = random_history(seed, 2000, load.live_cap);
      for (const Variant& v : variants) {
        INFO(v.allocator << " (" << v.label << "), seed " << seed << ", capacity "
                         << load.capacity);
        ReplayConfig config;
        config.capacity = load.capacity;
        config.options = v.options;
        config.check_invariants = true;
        ModelResult r;
        REQUIRE_NOTHROW(r = replay(history, v.allocator, config));
        CHECK(r.reserved_after_empty_cache == 0);
        if (load.capacity == 0) CHECK(r.completed);
        if (load.capacity != 0) CHECK(r.usage.peak_reserved <= load.capacity);
        if (r.completed) {
          CHECK(r.usage.mallocs + r.usage.frees == history.events.size());
          CHECK(r.usage.peak_reserved >= r.usage.peak_allocated);
        } else {
          CHECK(r.usage.ooms == 1);
        }
        CHECK(r.usage.peak_allocated >= r.usage.peak_requested);
        if (v.label.rfind("frag_limit", 0) == 0 && load.capacity == 0)
          CHECK(counter_of(r.counters, "stitches") > 0);
        if (v.label == "segment_va 1 GiB" && load.capacity == 0) // 3 streams, 2 pools: 6 at least
          CHECK(counter_of(r.counters, "segments_created") > 6);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Registry and config

TEST_CASE("alloc registry: the three models, and unknown names listed", "[alloc]") {
  CHECK(allocator_names() == std::vector<std::string>{"caching", "expandable", "gmlake"});
  SimDriver driver(0);
  for (const auto& name : allocator_names()) CHECK(make_allocator(name, {}, driver) != nullptr);
  CHECK_THROWS_AS(make_allocator("buddy", {}, driver), ConfigError);
  CHECK_THROWS_WITH(make_allocator("buddy", {}, driver),
                    Contains("'buddy'") && Contains("caching, expandable, gmlake"));
  CHECK_THROWS_AS(require_allocator("Caching"), ConfigError);
  CHECK_NOTHROW(require_allocator("gmlake"));
}

TEST_CASE("alloc config: defaults and values are read and resolved", "[alloc]") {
  json resolved;
  const ReplayConfig d = read_replay_config(json::object(), "alloc.json", resolved);
  CHECK(d.allocators == std::vector<std::string>{"caching", "expandable", "gmlake"});
  CHECK(d.capacity == 0);
  CHECK(d.options.max_split_size == kNoLimit);
  CHECK(d.options.frag_limit == 512 * MiB);
  CHECK(resolved["allocators"] == json{"caching", "expandable", "gmlake"});

  const json doc = {{"allocators", json::array({"gmlake"})},
                    {"capacity_bytes", 1024 * MiB},
                    {"options",
                     {{"max_split_size_mb", 64},
                      {"gmlake_frag_limit", 8 * MiB},
                      {"gmlake_reuse_limit", 3},
                      {"gmlake_defrag_level", 1},
                      {"gmlake_realloc_missing", true}}}};
  const ReplayConfig c = read_replay_config(doc, "alloc.json", resolved);
  CHECK(c.allocators == std::vector<std::string>{"gmlake"});
  CHECK(c.capacity == 1024 * MiB);
  CHECK(c.options.max_split_size == 64 * MiB);
  CHECK(c.options.frag_limit == 8 * MiB);
  CHECK(c.options.reuse_limit == 3);
  CHECK(c.options.defrag_level == 1);
  CHECK(c.options.realloc_missing);
  CHECK(resolved["options"]["gmlake_auto_gc"] == Options{}.auto_gc);
}

TEST_CASE("alloc config: errors name the file and the JSON path", "[alloc]") {
  auto error_of = [](const json& doc) -> std::string {
    json resolved;
    try {
      read_replay_config(doc, "alloc.json", resolved);
    } catch (const ConfigError& e) {
      return e.what();
    }
    FAIL("reading " << doc.dump() << " did not throw ConfigError");
    return "";
  };
  CHECK_THAT(error_of({{"options", {{"bogus", 1}}}}),
             Contains("alloc.json") && Contains("$.options.bogus") && Contains("unknown key"));
  CHECK_THAT(error_of({{"bogus", 1}}), Contains("$.bogus") && Contains("unknown key"));
  CHECK_THAT(error_of({{"capacity_bytes", "lots"}}),
             Contains("alloc.json") && Contains("$.capacity_bytes") && Contains("lots"));
  CHECK_THAT(error_of({{"allocators", {"caching", "buddy"}}}),
             Contains("$.allocators[1]") && Contains("buddy") &&
                 Contains("caching, expandable, gmlake"));
  CHECK_THAT(error_of({{"allocators", json::array()}}), Contains("$.allocators"));
  CHECK_THAT(error_of({{"allocators", {"caching", 3}}}), Contains("$.allocators[1]"));
  CHECK_THAT(error_of({{"options", {{"gmlake_reuse_limit", 0}}}}),
             Contains("$.options.gmlake_reuse_limit"));
  CHECK_THAT(error_of({{"options", {{"gmlake_defrag_level", 3}}}}),
             Contains("$.options.gmlake_defrag_level"));
  CHECK_THAT(error_of({{"options", {{"expandable_large_page", 3 * MiB}}}}),
             Contains("$.options.expandable_large_page"));
  CHECK_THAT(error_of({{"options", {{"max_split_size_mb", 16}}}}),
             Contains("$.options.max_split_size_mb") && Contains("more than 20"));
}
