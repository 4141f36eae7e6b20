#include "sim/core/error.h"
#include "sim/uvm/migrator.h"

#include <catch2/catch.hpp>
#include <random>

using namespace faultline;

namespace {

config::LinkCurve flat_curve() {
  config::LinkCurve c;
  c.overhead_ns = 100;
  c.points = {{4096, 2.0}};
  return c;
}

config::TopologySpec one_gpu() {
  config::LinkProfile link{"flat", "pcie", flat_curve(), flat_curve()};
  return {"one", {{"GPU0", {}}}, {}, {{"host", "GPU0", link, 1}}};
}

struct Rig {
  explicit Rig(uint64_t chunks) : memory(1, chunks) {}
  MemoryModel memory;
  Topology topology{one_gpu()};
  const LinkDirection& up = *topology.route(kHost, 1).hops()[0];
  const LinkDirection& down = *topology.route(1, kHost).hops()[0];
  config::GpuProfile gpu;
  config::DriverConfig driver;
  Stats stats;
  Migrator migrator{memory, topology, gpu, driver, stats};
};

PageMask random_pages(std::mt19937_64& rng) {
  PageMask m;
  const unsigned first = rng() % kPagesPerBlock;
  const unsigned count = 1 + rng() % (kPagesPerBlock - first);
  for (unsigned p = first; p < first + count; ++p)
    if (rng() % 4) m.set(p);
  return m;
}

uint64_t allocated_pages(MemoryModel& m, Addr base, Bytes size) {
  uint64_t n = 0;
  m.for_each_block(base, size, [&](VaBlock& b, const PageMask&) { n += b.allocated.count(); });
  return n;
}

uint64_t accounted_pages(MemoryModel& m, Addr base, Bytes size) {
  uint64_t n = 0;
  m.for_each_block(base, size, [&](VaBlock& b, const PageMask&) {
    n += b.unpopulated().count() + b.resident[kHost].count() + b.resident[1].count();
  });
  return n;
}

} // namespace

TEST_CASE("moving pages keeps each page in one place and counts the copies", "[memory]") {
  Rig rig(4);
  rig.memory.add_managed(0, kBlockSize);
  VaBlock& b = *rig.memory.find(0);
  CHECK(b.unpopulated().count() == kPagesPerBlock);
  rig.memory.move(b, kHost, PageMask::range(0, 100), 0); // host first touch
  const Time end = rig.migrator.to_gpu(b, 0, PageMask::range(50, 100), {}, 1000, "test");
  CHECK(rig.stats.pages_h2d == 50);       // pages 50..99 came from the host
  CHECK(rig.stats.pages_populated == 50); // pages 100..149 were never touched
  CHECK(rig.up.bytes() == 50 * kPageSize);
  CHECK(end == 1000 + 100 + 50 * 4096 / 2);
  CHECK(b.resident[1] == PageMask::range(50, 100));
  CHECK(b.resident[kHost] == PageMask::range(0, 50));
  CHECK(rig.memory.chunks_used(0) == 1);
  rig.memory.check_invariants();
  rig.migrator.to_host(b, 0, PageMask::range(0, kPagesPerBlock), end, "test");
  CHECK(rig.memory.chunks_used(0) == 0);
  CHECK(rig.stats.pages_d2h == 100);
  rig.memory.check_invariants();
}

TEST_CASE("make_room evicts in first-residency order and skips the block being served",
          "[memory]") {
  Rig rig(2);
  rig.memory.add_managed(0, 4 * kBlockSize);
  for (uint64_t i = 0; i < 2; ++i) {
    rig.migrator.to_gpu(*rig.memory.find(i), 0, PageMask::big_page(0), {}, 0, "test");
  }
  VaBlock& third = *rig.memory.find(2);
  rig.migrator.make_room(0, 0, &third);
  CHECK(!rig.memory.find(0)->chunk[0]); // the oldest went first
  CHECK(rig.memory.find(1)->chunk[0]);
  CHECK(rig.stats.evictions == 1);
  rig.migrator.to_gpu(third, 0, PageMask::big_page(0), {}, 0, "test");
  // Block 1 is now the oldest; keeping it makes block 2 the victim.
  rig.migrator.make_room(0, 0, rig.memory.find(1));
  CHECK(rig.memory.find(1)->chunk[0]);
  CHECK(!third.chunk[0]);
}

TEST_CASE("an eviction copies its chunk's pages in one transfer; each run beyond the first "
          "costs eviction_run_ns",
          "[memory]") {
  Rig rig(1);
  rig.gpu.eviction_ns = 1000;
  rig.gpu.eviction_run_ns = 300;
  rig.memory.add_managed(0, 2 * kBlockSize);
  VaBlock& b = *rig.memory.find(0);
  const PageMask three_runs =
      PageMask::range(0, 16) | PageMask::range(64, 16) | PageMask::range(200, 16);
  const Time arrived = rig.migrator.to_gpu(b, 0, three_runs, {}, 0, "test");
  // The next block needs the only chunk: block 0 goes, 48 pages in one copy (one overhead),
  // then the driver's fixed cost and two runs more.
  const Time end = rig.migrator.make_room(0, arrived, rig.memory.find(1));
  CHECK(rig.stats.evictions == 1);
  CHECK(rig.down.bytes() == 48 * kPageSize);
  CHECK(end == arrived + 100 + 48 * 4096 / 2 + 1000 + 2 * 300);
  // HUVM's large-page eviction: the runs cost nothing more.
  Rig huvm(1);
  huvm.gpu.eviction_ns = 1000;
  huvm.gpu.eviction_run_ns = 300;
  huvm.driver.block_eviction = true;
  huvm.memory.add_managed(0, 2 * kBlockSize);
  const Time in = huvm.migrator.to_gpu(*huvm.memory.find(0), 0, three_runs, {}, 0, "test");
  CHECK(huvm.migrator.make_room(0, in, huvm.memory.find(1)) == in + 100 + 48 * 4096 / 2 + 1000);
  // Each 64 KB copied costs eviction_page_ns beside the copy: 48 pages of 4 KB are 3 of 64 KB.
  Rig paged(1);
  paged.gpu.eviction_ns = 1000;
  paged.gpu.eviction_page_ns = 160;
  paged.memory.add_managed(0, 2 * kBlockSize);
  const Time back =
      paged.migrator.to_gpu(*paged.memory.find(0), 0, PageMask::range(0, 48), {}, 0, "test");
  CHECK(paged.migrator.make_room(0, back, paged.memory.find(1)) ==
        back + 100 + 48 * 4096 / 2 + 1000 + 3 * 160);
}

TEST_CASE("a fault service's copies cost one transfer when they leave the block whole on the "
          "GPU (eviction_run_ns a run beyond the first), a transfer a run otherwise; a "
          "prefetch's a transfer a run",
          "[memory]") {
  PageMask even, odd; // 64 KB pages 0, 2, ... 30 and 1, 3, ... 31: 16 runs each
  for (unsigned p = 0; p < kBigPagesPerBlock; ++p) (p % 2 ? odd : even) |= PageMask::big_page(p);
  const Time run = 100 + kPagesPerBigPage * kPageSize / 2; // one 64 KB run on the flat link
  auto rig_with_even_held = [&](Rig& rig) -> VaBlock& {
    rig.memory.add_managed(0, kBlockSize);
    VaBlock& b = *rig.memory.find(0);
    rig.memory.move(b, kHost, PageMask::range(0, kPagesPerBlock), 0); // host-written
    rig.migrator.to_gpu(b, 0, even, {}, 0, "test");
    return b;
  };
  const Time t0 = 16 * run; // the even pages' 16 copies are done by then
  Rig filled(1);
  filled.gpu.eviction_run_ns = 300;
  VaBlock& b = rig_with_even_held(filled);
  CHECK(filled.migrator.to_gpu(b, 0, odd, {}, t0, "fault", true) ==
        t0 + 100 + 16 * kPagesPerBigPage * kPageSize / 2 + 15 * 300);
  CHECK(b.resident[1] == PageMask::range(0, kPagesPerBlock));
  filled.memory.check_invariants();
  // The same pages by a prefetch call: a copy each run.
  Rig prefetched(1);
  VaBlock& c = rig_with_even_held(prefetched);
  CHECK(prefetched.migrator.to_gpu(c, 0, odd, odd, t0, "prefetch") == t0 + 16 * run);
  // A fault service that leaves the block in part: a copy each run.
  Rig part(1);
  part.gpu.eviction_run_ns = 300; // not paid: each run is a copy of its own
  VaBlock& d = rig_with_even_held(part);
  const PageMask some_odd = odd & PageMask::range(0, kPagesPerBlock / 2);
  CHECK(part.migrator.to_gpu(d, 0, some_odd, {}, t0, "fault", true) == t0 + 8 * run);
  CHECK(part.up.bytes() == 24 * kPagesPerBigPage * kPageSize);
}

TEST_CASE("an eviction call populates its chunk's untouched pages on the host, once, for "
          "eviction_populate_ns; the driver's own eviction does not",
          "[memory]") {
  Rig rig(4);
  rig.gpu.eviction_ns = 1000;
  rig.gpu.eviction_populate_ns = 50000;
  rig.memory.add_managed(0, 2 * kBlockSize);
  VaBlock& b = *rig.memory.find(0);
  rig.migrator.to_gpu(b, 0, PageMask::range(0, 32), {}, 0, "test"); // 2 of 32 big pages
  rig.memory.discard(b, PageMask::range(480, 32));                  // left out of the call
  const Time t = 1'000'000;
  // The budget's 2 MB call: 32 pages back in one copy, the driver's cost, the populate cost.
  CHECK(rig.migrator.free_chunk(b, 0, t, "test") == t + 100 + 32 * 4096 / 2 + 1000 + 50000);
  CHECK(!b.chunk[0]);
  CHECK(b.resident[kHost] == PageMask::range(0, 480));
  CHECK(b.unpopulated() == PageMask::range(480, 32));
  CHECK(rig.stats.pages_populated_on_host == 448);
  CHECK(rig.stats.pages_d2h == 32);
  rig.memory.check_invariants();
  // The GPU's next touch of a page it never held migrates it; a later call has nothing to fill.
  const Time in = rig.migrator.to_gpu(b, 0, PageMask::range(32, 16), {}, 2 * t, "test");
  CHECK(rig.stats.pages_h2d == 16);
  CHECK(rig.migrator.free_chunk(b, 0, in, "test") == in + 100 + 16 * 4096 / 2 + 1000);
  // A policy's eviction fills only the range it names.
  VaBlock& c = *rig.memory.find(1);
  rig.migrator.to_gpu(c, 0, PageMask::range(0, 16), {}, 0, "test");
  rig.migrator.policy_evict(c, 0, PageMask::range(0, 64), t);
  CHECK(c.resident[kHost] == PageMask::range(0, 64));
  CHECK(c.unpopulated() == PageMask::range(64, kPagesPerBlock - 64));
  // A call over a chunk nobody touched (a policy's eviction) populates it on the host too.
  rig.memory.add_managed(2 * kBlockSize, kBlockSize);
  VaBlock& never = *rig.memory.find(2);
  CHECK(rig.migrator.populate_on_host(never, PageMask::range(0, 64), t) == 50000);
  CHECK(never.resident[kHost] == PageMask::range(0, 64));
  CHECK(rig.migrator.populate_on_host(never, PageMask::range(0, 64), t) == 0);
  // The driver's eviction on a fault (no call over the range) copies back what the GPU holds.
  Rig driver(1);
  driver.gpu.eviction_populate_ns = 50000;
  driver.memory.add_managed(0, 2 * kBlockSize);
  VaBlock& d = *driver.memory.find(0);
  driver.migrator.to_gpu(d, 0, PageMask::range(0, 16), {}, 0, "test");
  CHECK(driver.migrator.make_room(0, t, driver.memory.find(1)) == t + 100 + 16 * 4096 / 2);
  CHECK(d.resident[kHost] == PageMask::range(0, 16));
  CHECK(driver.stats.pages_populated_on_host == 0);
}

TEST_CASE("a copy back to the GPU waits for the page's copy out to land", "[memory]") {
  Rig rig(2);
  rig.memory.add_managed(0, 2 * kBlockSize);
  VaBlock& b = *rig.memory.find(0);
  const Time in = rig.migrator.to_gpu(b, 0, PageMask::range(0, 16), {}, 0, "test");
  rig.memory.move(b, 1, PageMask::range(0, 16), in); // the GPU wrote them: data to keep
  const Time out = rig.migrator.to_host(b, 0, PageMask::range(0, 16), in, "test", true);
  CHECK(out == in + 100 + 16 * 4096 / 2);
  CHECK(b.host_ready_at == out);
  // Asked for at once, the copy back cannot read host data that has not arrived yet.
  const Time back = rig.migrator.to_gpu(b, 0, PageMask::range(0, 16), {}, in, "test");
  CHECK(back == out + 100 + 16 * 4096 / 2);
  // Pages that never left are not held back: a populate needs no copy from the host.
  VaBlock& fresh = *rig.memory.find(1);
  CHECK(rig.migrator.to_gpu(fresh, 0, PageMask::range(0, 16), {}, in, "test") == in);
}

TEST_CASE("a chunk still copying out is taken only once its copy lands, before anything more is "
          "evicted",
          "[memory]") {
  Rig rig(2);
  rig.memory.add_managed(0, 4 * kBlockSize);
  VaBlock& a = *rig.memory.find(0);
  VaBlock& b = *rig.memory.find(1);
  rig.migrator.to_gpu(a, 0, PageMask::range(0, 64), {}, 0, "test");
  rig.migrator.to_gpu(b, 0, PageMask::range(0, 64), {}, 0, "test");
  const Time out = rig.migrator.policy_evict(a, 0, PageMask::range(0, 64), 1000000);
  CHECK(!a.chunk[0]);
  CHECK(rig.memory.chunks_free(0) == 1);
  SECTION("the chunk is free once the copy is done") {
    rig.migrator.leave_at(0, out);
    CHECK(rig.migrator.make_room(0, 1000000, rig.memory.find(2)) == out);
    CHECK(rig.stats.evictions == 0); // the driver evicted nothing to make room
    CHECK(b.chunk[0]);
    // Taken: the next block needs a chunk of its own, and b is evicted for it.
    rig.migrator.to_gpu(*rig.memory.find(2), 0, PageMask::range(0, 1), {}, out, "test");
    CHECK(rig.migrator.make_room(0, out, rig.memory.find(3)) > out);
    CHECK(!b.chunk[0]);
  }
  SECTION("a chunk that is not held is free at once (the budget's GPU)") {
    CHECK(rig.migrator.make_room(0, 1000000, rig.memory.find(2)) == 1000000);
  }
  SECTION("device memory that took the chunk since leaves nothing to wait for") {
    rig.migrator.leave_at(0, out);
    rig.memory.reserve_device(0, 1);
    const Time room = rig.migrator.make_room(0, 1000000, rig.memory.find(2));
    CHECK(!b.chunk[0]); // evicted: the chunk that was leaving is device memory's now
    CHECK(room > out);  // queued on the link behind the copy that was leaving
  }
  rig.memory.check_invariants();
}

TEST_CASE("LRU order moves a touched block to the back", "[memory]") {
  Rig rig(2);
  rig.memory.add_managed(0, 3 * kBlockSize);
  rig.migrator.to_gpu(*rig.memory.find(0), 0, PageMask::big_page(0), {}, 0, "test");
  rig.migrator.to_gpu(*rig.memory.find(1), 0, PageMask::big_page(0), {}, 0, "test");
  rig.memory.touch(*rig.memory.find(0), 0);
  rig.migrator.make_room(0, 0, nullptr);
  CHECK(rig.memory.find(0)->chunk[0]);
  CHECK(!rig.memory.find(1)->chunk[0]);
}

TEST_CASE("device memory takes chunks and never fits beyond capacity", "[memory]") {
  MemoryModel m(1, 4);
  m.reserve_device(0, 3);
  CHECK(m.chunks_free(0) == 1);
  REQUIRE_THROWS_AS(m.reserve_device(0, 2), SimulationError);
  m.release_device(0, 3);
  CHECK(m.chunks_free(0) == 4);
}

TEST_CASE("a discard marks the pages that held data until they are populated again or freed",
          "[memory]") {
  Rig rig(4);
  rig.memory.add_managed(0, 2 * kBlockSize);
  VaBlock& b = *rig.memory.find(0);
  rig.migrator.to_gpu(b, 0, PageMask::range(0, 100), {}, 0, "test");
  rig.memory.move(b, kHost, PageMask::range(100, 20), 0);
  rig.memory.discard(b, PageMask::range(50, 100)); // 50 on the GPU, 20 on the host, 30 never used
  CHECK(b.discarded == PageMask::range(50, 70));
  CHECK(b.unpopulated().count() == kPagesPerBlock - 50);
  rig.memory.check_invariants();
  // Populated again (a fault or a prefetch) they are ordinary pages.
  rig.migrator.to_gpu(b, 0, PageMask::range(60, 10), {}, 0, "test");
  CHECK(b.discarded == (PageMask::range(50, 10) | PageMask::range(70, 50)));
  rig.memory.check_invariants();
  // Freed and allocated again at the same address, the memory starts fresh.
  rig.memory.remove_managed(0, kBlockSize);
  rig.memory.add_managed(0, kBlockSize);
  CHECK(rig.memory.find(0)->discarded.none());
  // A plain drop (the allocation's end) marks nothing.
  VaBlock& other = *rig.memory.find(1);
  rig.migrator.to_gpu(other, 0, PageMask::range(0, 10), {}, 0, "test");
  rig.memory.drop(other, PageMask::range(0, 10));
  CHECK(other.discarded.none());
}

TEST_CASE("randomized operations keep the memory model's invariants", "[memory][invariants]") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    Rig rig(1 + rng() % 6);
    const Addr base = 64 * kBlockSize;
    const Bytes size = (4 + rng() % 12) * kBlockSize - (rng() % 64) * kPageSize;
    rig.memory.add_managed(base, size);
    const uint64_t pages = allocated_pages(rig.memory, base, size);
    Time now = 0;
    for (int step = 0; step < 400; ++step) {
      VaBlock* b = rig.memory.find(base / kBlockSize + rng() % (size / kBlockSize + 1));
      if (!b) continue;
      const PageMask pages_here = random_pages(rng);
      Time done = now;
      switch (rng() % 4) {
      case 0:
      case 1:
        if (!b->chunk[0]) done = rig.migrator.make_room(0, now, b);
        done = rig.migrator.to_gpu(*b, 0, pages_here, pages_here, done, "test");
        break;
      case 2:
        done = rig.migrator.to_host(*b, 0, pages_here, now, "test");
        break;
      default:
        if (rng() % 2)
          rig.memory.drop(*b, pages_here);
        else
          rig.memory.discard(*b, pages_here);
        break;
      }
      REQUIRE(done >= now); // time never goes back
      now = done;
      rig.memory.check_invariants();
      REQUIRE(rig.memory.chunks_used(0) <= rig.memory.capacity_chunks());
      // Bytes are conserved: every page is in exactly one state, and link bytes are pages moved.
      REQUIRE(accounted_pages(rig.memory, base, size) == pages);
      REQUIRE(rig.up.bytes() == rig.stats.pages_h2d * kPageSize);
      REQUIRE(rig.down.bytes() == rig.stats.pages_d2h * kPageSize);
    }
    rig.memory.remove_managed(base, size);
    CHECK(rig.memory.blocks() == 0);
    CHECK(rig.memory.chunks_used(0) == 0);
  }
}
