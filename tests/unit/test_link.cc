#include "sim/topology/topology.h"

#include <catch2/catch.hpp>
#include <random>
#include <vector>

using namespace faultline;

namespace {

config::TopologySpec one_gpu() {
  config::LinkCurve c;
  c.overhead_ns = 100;
  c.points = {{4096, 2.0}}; // 4 KB: 100 + 2048 ns
  config::LinkProfile link{"flat", "pcie", c, c};
  return {"one", {{"GPU0", {}}}, {}, {{"host", "GPU0", link, 1}}};
}

Time overlap(const std::vector<Transfer>& a, const std::vector<Transfer>& b) {
  Time both = 0;
  for (const Transfer& x : a)
    for (const Transfer& y : b)
      both += std::max<Time>(0, std::min(x.end, y.end) - std::max(x.start, y.start));
  return both;
}

} // namespace

TEST_CASE("link: a route's busy time and the time both directions carried a copy", "[link]") {
  Topology topology(one_gpu());
  Route& in = topology.route(kHost, 1);
  Route& out = topology.route(1, kHost);
  CHECK(in.transfer(0, 4096, "test").end == 2148);
  CHECK(in.transfer(0, 4096, "test").start == 2148); // queued behind the first
  const Transfer back = out.transfer(1000, 4096, "test");
  CHECK(back.start == 1000);
  CHECK(in.busy_ns() == 4296);
  CHECK(out.busy_ns() == 2148);
  CHECK(in.both_busy_ns() == 2148); // [1000, 3148] lies inside [0, 4296]
  CHECK(out.both_busy_ns() == in.both_busy_ns());
  // Idle between copies counts neither as busy nor as overlap.
  out.transfer(10'000, 4096, "test");
  CHECK(out.busy_ns() == 2 * 2148);
  CHECK(in.both_busy_ns() == 2148);
}

TEST_CASE("link: the duplex overlap equals the pairwise intersection of the copies, any order",
          "[link]") {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    Topology topology(one_gpu());
    Route* routes[2] = {&topology.route(kHost, 1), &topology.route(1, kHost)};
    std::vector<Transfer> done[2];
    Time clock = 0;
    for (int i = 0; i < 400; ++i) {
      const unsigned d = rng() % 2;
      clock += static_cast<Time>(rng() % 3000);
      // Copies queued ahead of the clock too, as prefetches and write-backs are.
      const Time ready = clock + static_cast<Time>(rng() % 4 == 0 ? rng() % 20'000 : 0);
      done[d].push_back(routes[d]->transfer(ready, 4096 * (1 + rng() % 8), "test"));
    }
    INFO("seed " << seed);
    Time busy[2] = {0, 0};
    for (unsigned d = 0; d < 2; ++d)
      for (const Transfer& t : done[d]) busy[d] += t.end - t.start;
    CHECK(routes[0]->busy_ns() == busy[0]);
    CHECK(routes[1]->busy_ns() == busy[1]);
    CHECK(routes[0]->both_busy_ns() == overlap(done[0], done[1]));
    CHECK(routes[1]->both_busy_ns() == routes[0]->both_busy_ns());
  }
}
