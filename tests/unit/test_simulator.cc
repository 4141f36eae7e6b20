#include "policies/registry.h"
#include "sim/config/reader.h"
#include "sim/core/error.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"
#include "sim/trace/writer.h"
#include "sim_fixture.h"
#include "sim_test_helpers.h"
#include "source_dir.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace simtest;

TEST_CASE("a first touch on the GPU costs one batch and no copy", "[sim]") {
  Scratch s;
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {{0, 0}})});
  const Outcome o = simulate(Scratch::run_config(), trace, 4);
  // batch: 10 us fixed + 1 us x 1 fault + 2 us for the block + 1 us page tables
  CHECK(o.end == 14000);
  CHECK(o.stats.faults == 1);
  CHECK(o.stats.batches == 1);
  CHECK(o.stats.pages_h2d == 0);
  CHECK(o.stats.pages_populated == kPagesPerBigPage);
  CHECK(o.stats.stall_ns == 13000);
  CHECK(o.stats.kernel_rows.at(0).stall_ns == 13000);
}

TEST_CASE("host-resident data is copied over the link inside the batch", "[sim]") {
  Scratch s;
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {{0, 0}})}, true);
  const Outcome o = simulate(Scratch::run_config(), trace, 4);
  // the copy starts after the block's 2 us share (t = 13 us) and takes 1 us + 65536 ns
  CHECK(o.end == 13000 + 1000 + 65536);
  CHECK(o.stats.pages_h2d == kPagesPerBigPage);
}

TEST_CASE("eviction follows first residency and writes pages back", "[sim]") {
  Scratch s;
  const auto trace = write_trace(
      s, 2,
      {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}}), kernel(2000, 1000, {{0, 0}})});
  const Outcome o = simulate(Scratch::run_config(), trace, 1);
  CHECK(o.stats.evictions == 2);
  CHECK(o.stats.pages_d2h == 2 * kPagesPerBigPage); // each victim held one big page
  CHECK(o.stats.pages_h2d == kPagesPerBigPage);     // block 0 comes back from the host
  CHECK(o.stats.faults == 3);
}

TEST_CASE("LRU keeps the recently used block that FIFO would evict", "[sim]") {
  Scratch s;
  // Block 0 resident first, block 1 second, block 0 touched again, then block 2 needs room.
  const auto trace = write_trace(s, 3,
                                 {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}}),
                                  kernel(2000, 1000, {{0, 0}}), kernel(3000, 1000, {{64, 0}}),
                                  kernel(4000, 1000, {{0, 0}})});
  const Outcome fifo = simulate(Scratch::run_config({{"eviction", "fifo"}}), trace, 2);
  const Outcome lru = simulate(Scratch::run_config({{"eviction", "lru"}}), trace, 2);
  CHECK(fifo.stats.faults == 4); // block 0 was evicted and faults again
  CHECK(lru.stats.faults == 3);
}

TEST_CASE("a kernel stalls once its outstanding faults reach the fault parallelism", "[sim]") {
  Scratch s;
  const auto trace = write_trace(s, 2, {kernel(0, 1000, {{0, 0}, {32, 500}})});
  nlohmann::json one = Scratch::run_config();
  one["gpu"] = {{"profile", "simgpu"}, {"fault_parallelism", 1}};
  const Outcome serial = simulate(one, trace, 4);
  const Outcome overlapped = simulate(Scratch::run_config(), trace, 4);
  // parallelism 1: the second access waits for the first fault replay, then takes its own batch;
  // the kernel's last 500 ns of compute come after it
  CHECK(serial.end == 14000 + 500 + 14000 + 500);
  // parallelism 64: the second fault waits in the buffer and is fetched at the first fault replay
  CHECK(overlapped.end == 14000 + 14000);
  CHECK(serial.stats.batches == 2);
  CHECK(overlapped.stats.batches == 2);
}

TEST_CASE("batches hold at most batch_size entries and coalesce duplicates", "[sim]") {
  Scratch s;
  // Five faults raised before the first batch is fetched: same time, same kernel.
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {{0, 0}, {0, 0}, {1, 0}, {2, 0}, {3, 0}})});
  const Outcome o =
      simulate(Scratch::run_config({{"batch_size", 2}, {"prefetch", false}}), trace, 4);
  CHECK(o.stats.faults == 5);
  CHECK(o.stats.batches == 3);
  CHECK(o.stats.duplicate_faults == 1);
}

TEST_CASE("the density prefetcher brings the rest of a mostly-touched region", "[sim]") {
  Scratch s;
  std::vector<std::pair<uint64_t, Time>> pages;
  for (uint64_t p = 0; p < 12; ++p) pages.push_back({p, static_cast<Time>(p) * 100000});
  const auto trace = write_trace(s, 1, {kernel(0, 2000000, pages)});
  const Outcome on = simulate(Scratch::run_config({{"prefetch", true}}), trace, 4);
  const Outcome off = simulate(Scratch::run_config({{"prefetch", false}}), trace, 4);
  CHECK(off.stats.faults == 12);
  CHECK(off.stats.prefetch_issued == 0);
  CHECK(on.stats.faults < 12);
  CHECK(on.stats.prefetch_issued > 0);
  CHECK(on.stats.prefetch_used + on.stats.prefetch_wasted == on.stats.prefetch_issued);
}

TEST_CASE("an access outside every allocation is an error naming the kernel", "[sim]") {
  Scratch s;
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {{40, 0}})});
  REQUIRE_THROWS_WITH(simulate(Scratch::run_config(), trace, 4),
                      Catch::Contains("kernel #0") && Catch::Contains("no live allocation"));
}

namespace {

// Prefetches every argument of a kernel before it launches.
class PrefetchArgs : public policies::IPolicy {
public:
  PrefetchArgs(const nlohmann::json& params, const std::string& where) {
    config::Reader(params, where).finish();
  }
  void on_kernel_launch(const policies::LaunchEvent& e, policies::Actions& out) override {
    for (const auto& r : e.args)
      out.push_back({policies::ActionKind::kPrefetch, r, gpu_processor(0)});
  }
};
FAULTLINE_REGISTER_POLICY(PrefetchArgs, "test_prefetch_args");

} // namespace

TEST_CASE("policy prefetch actions are executed and their use is counted", "[sim][policy]") {
  Scratch s;
  // The 2 MB copy takes 1 us + 2.1 ms; the kernel touches two big pages after that.
  trace::KernelRecord k = kernel(0, 4000000, {{0, 3000000}, {1, 3000000}});
  k.args = {1};
  const std::string path = write_trace(s, 1, {k}, true);
  const Outcome o =
      simulate(Scratch::run_config(nlohmann::json::object(), "test_prefetch_args"), path, 4);
  CHECK(o.stats.faults == 0);
  CHECK(o.stats.prefetch_issued == kPagesPerBlock);
  CHECK(o.stats.prefetch_used == 2 * kPagesPerBigPage);
  CHECK(o.stats.prefetch_wasted == kPagesPerBlock - 2 * kPagesPerBigPage);
  CHECK(o.stats.pages_h2d == kPagesPerBlock);
}

TEST_CASE("a fault on a page still in flight waits for the copy and uses the prefetch",
          "[sim][policy]") {
  Scratch s;
  trace::KernelRecord k = kernel(0, 1000, {{0, 0}});
  k.args = {1};
  const std::string path = write_trace(s, 1, {k}, true);
  const Outcome o =
      simulate(Scratch::run_config(nlohmann::json::object(), "test_prefetch_args"), path, 4);
  CHECK(o.stats.faults == 1);
  CHECK(o.stats.pages_h2d == kPagesPerBlock); // nothing is copied twice
  CHECK(o.stats.prefetch_used == kPagesPerBigPage);
  CHECK(o.end >= 1000 + static_cast<Time>(kBlockSize)); // the copy bounds the batch
}

TEST_CASE("randomized runs keep every invariant", "[sim][invariants]") {
  Scratch s;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    synth::Params p;
    p.pattern = std::vector<std::string>{"stream", "random", "dnn"}[seed % 3];
    p.footprint = (8 + rng() % 24) * kBlockSize;
    p.iterations = 2;
    p.seed = seed;
    p.layers = 3 + rng() % 4;
    p.kernels_per_iteration = 3 + rng() % 5;
    p.touches = 1 + rng() % 3;
    const std::string path = s.file("r.fltrace");
    const uint64_t accesses = synth::write_trace(p, path, "test");
    const trace::TraceStats ts = trace::compute_stats(path);
    nlohmann::json cfg = Scratch::run_config({{"batch_size", 1 + rng() % 300},
                                              {"eviction", rng() % 2 ? "lru" : "fifo"},
                                              {"prefetch", rng() % 2 == 0}});
    cfg["gpu"] = {{"profile", "simgpu"}, {"fault_parallelism", 1 + rng() % 100}};
    const uint64_t chunks = std::max<uint64_t>(2, ts.footprint_chunks * (20 + rng() % 100) / 100);
    const config::RunConfig config = simtest::parse(cfg);
    Simulator sim(config, path, chunks);
    sim.set_check_invariants(true);
    LinkBytes links;
    sim.set_transfer_observer(&links);
    const Stats& st = sim.run();
    INFO("seed " << seed << " pattern " << p.pattern);
    CHECK(st.accesses == accesses);
    CHECK(st.hits + st.faults == accesses);
    CHECK(st.peak_chunks <= chunks);
    CHECK(links.bytes["PCIe host->GPU0"] == st.pages_h2d * kPageSize);
    CHECK(links.bytes["PCIe GPU0->host"] == st.pages_d2h * kPageSize);
    CHECK(st.prefetch_used + st.prefetch_wasted == st.prefetch_issued);
    Time previous_end = 0;
    for (const KernelRow& k : st.kernel_rows) {
      CHECK(k.start >= previous_end); // time never goes back
      CHECK(k.end - k.start == k.compute_ns + k.stall_ns);
      CHECK(k.stall_ns >= 0);
      previous_end = k.end;
    }
    CHECK(sim.end_time() >= previous_end);
  }
}

TEST_CASE("same inputs give byte-identical results and timelines", "[sim][determinism]") {
  Scratch s;
  synth::Params p;
  p.footprint = 24 * kBlockSize;
  p.layers = 4;
  synth::write_trace(p, s.file("d.fltrace"), "test");
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 0.5}};
  s.write("run.json", cfg);
  std::string outputs[2];
  for (int i = 0; i < 2; ++i) {
    SimRequest request{s.file("run.json"), s.file("d.fltrace"),
                       s.file("tl" + std::to_string(i) + ".json")};
    outputs[i] = run_sim(request).dump();
  }
  CHECK(outputs[0] == outputs[1]);
  std::ifstream a(s.file("tl0.json")), b(s.file("tl1.json"));
  const std::string ta((std::istreambuf_iterator<char>(a)), {}),
      tb((std::istreambuf_iterator<char>(b)), {});
  CHECK(ta == tb);
  CHECK(nlohmann::json::parse(ta)["traceEvents"].size() > 10);
}

TEST_CASE("thrashing detection pins a ping-ponging block and maps it remotely", "[sim]") {
  Scratch s;
  std::vector<trace::KernelRecord> kernels;
  for (int i = 0; i < 12; ++i) kernels.push_back(kernel(i * 1000, 1000, {{(i % 2) * 32u, 0}}));
  const auto trace = write_trace(s, 2, kernels, true);
  const Outcome off = simulate(Scratch::run_config({{"thrashing_detection", false}}), trace, 1);
  // Each round trip takes ~150 us here (eviction copy + fetch copy), so a 10 ms lapse sees them.
  const Outcome on = simulate(
      Scratch::run_config({{"thrashing_detection", true}, {"thrashing_lapse_ns", 10'000'000}}),
      trace, 1);
  CHECK(off.stats.thrashing_pins == 0);
  CHECK(off.stats.evictions == 11);
  CHECK(on.stats.thrashing_pins >= 1);
  CHECK(on.stats.remote_accesses >= 1);
  CHECK(on.stats.evictions < off.stats.evictions);
}

namespace {

// Test policies: one advises remote access for every managed allocation, one counts pressure.
class AdviseRemote : public policies::IPolicy {
public:
  AdviseRemote(const nlohmann::json&, const std::string&) {}
  void on_alloc(const policies::AllocEvent& e, policies::Actions& out) override {
    if (e.managed && !e.block)
      out.push_back(
          {policies::ActionKind::kAdvise, e.range, kHost, policies::Advice::kAccessRemotely});
  }
};
FAULTLINE_REGISTER_POLICY(AdviseRemote, "test-advise-remote");

uint64_t g_pressure_events = 0, g_pressure_evictions = 0;
class CountPressure : public policies::IPolicy {
public:
  CountPressure(const nlohmann::json&, const std::string&) {}
  void on_memory_pressure(const policies::MemoryPressureEvent& e, policies::Actions&) override {
    ++g_pressure_events;
    g_pressure_evictions += e.evictions;
  }
};
FAULTLINE_REGISTER_POLICY(CountPressure, "test-count-pressure");

} // namespace

TEST_CASE("advice to access remotely maps pages over the link instead of migrating", "[sim]") {
  Scratch s;
  const auto trace =
      write_trace(s, 1, {kernel(0, 1000, {{0, 0}, {0, 10}}), kernel(2000, 1000, {{0, 0}})}, true);
  const Outcome remote =
      simulate(Scratch::run_config(nlohmann::json::object(), "test-advise-remote"), trace, 4);
  CHECK(remote.stats.pages_h2d == 0);       // nothing migrates
  CHECK(remote.stats.faults == 1);          // the first touch maps the page
  CHECK(remote.stats.remote_accesses == 2); // the other two go over the link
  const Outcome migrate = simulate(Scratch::run_config(), trace, 4);
  CHECK(migrate.stats.pages_h2d == kPagesPerBigPage);
  CHECK(migrate.stats.remote_accesses == 0);
}

TEST_CASE("the policy hears of memory pressure when the driver evicts", "[sim]") {
  Scratch s;
  const auto trace = write_trace(
      s, 2,
      {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}}), kernel(2000, 1000, {{0, 0}})});
  g_pressure_events = g_pressure_evictions = 0;
  const Outcome tight =
      simulate(Scratch::run_config(nlohmann::json::object(), "test-count-pressure"), trace, 1);
  CHECK(g_pressure_evictions == tight.stats.evictions);
  CHECK(g_pressure_events == 2);
  g_pressure_events = 0;
  simulate(Scratch::run_config(nlohmann::json::object(), "test-count-pressure"), trace, 2);
  CHECK(g_pressure_events == 0);
}

TEST_CASE("populate and fault-migrate costs are paid per 64 KB on the batch's CPU side", "[sim]") {
  Scratch s;
  s.write("gpus/simgpu.json",
          Scratch::gpu_profile({{"populate_ns", 500}, {"fault_migrate_ns", 700}}));
  // One first touch: the 14 us batch of the first test plus 500 ns to populate one big page.
  const Outcome fresh =
      simulate(Scratch::run_config(), write_trace(s, 1, {kernel(0, 1000, {{0, 0}})}), 4);
  CHECK(fresh.end == 14000 + 500);
  // From the host: the copy starts 700 ns later.
  const Outcome moved =
      simulate(Scratch::run_config(), write_trace(s, 1, {kernel(0, 1000, {{0, 0}})}, true), 4);
  CHECK(moved.end == 13000 + 700 + 1000 + 65536);
}

TEST_CASE("the host's first touch of never-touched pages costs host_populate_ns per 64 KB, "
          "charged per 4 KB page, and a second touch nothing",
          "[sim]") {
  Scratch s;
  s.write("gpus/simgpu.json", Scratch::gpu_profile({{"host_populate_ns", 1600}}));
  const std::string path = s.file("host.fltrace");
  trace::TraceWriter w(path, {{"source", "test"}});
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, kBlockSize, 0, 0});
  const Bytes touched = 2 * kBigPageSize + kPageSize + 1; // 2 big pages and 2 pages of a third
  w.write(trace::HostAccessRecord{0, kBase, touched, AccessType::kWrite});
  w.write(trace::HostAccessRecord{0, kBase, touched, AccessType::kRead}); // populated already
  w.write(kernel(0, 1000, {{0, 0}}));
  w.close();
  const Outcome o = simulate(Scratch::run_config(), path, 4);
  const Time populate = 34 * 1600 / 16;
  CHECK(o.stats.host_ns == populate);
  // The kernel then moves big page 0 from the host, as in the test above.
  CHECK(o.end == populate + 13000 + 1000 + 65536);
  // A range across two blocks pays for its pages in each; memory freed and allocated again at
  // the same address is never-touched again.
  const std::string again = s.file("again.fltrace");
  trace::TraceWriter a(again, {{"source", "test"}});
  a.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 2 * kBlockSize, 0, 0});
  a.write(trace::HostAccessRecord{0, kBase + kBlockSize - kPageSize, 3 * kPageSize,
                                  AccessType::kWrite}); // 1 page in block 0, 2 in block 1
  a.write(trace::FreeRecord{1, 0});
  a.write(trace::AllocRecord{2, trace::MemoryKind::kManaged, kBase, 2 * kBlockSize, 0, 0});
  a.write(trace::HostAccessRecord{0, kBase + kBlockSize, kPageSize, AccessType::kRead});
  a.write(kernel(0, 1000, {{0, 0}}));
  a.close();
  CHECK(simulate(Scratch::run_config(), again, 4).stats.host_ns == (3 + 1) * 1600 / 16);
  // Without the cost (older profiles), the host's first touch is free.
  s.write("gpus/simgpu.json", Scratch::gpu_profile());
  CHECK(simulate(Scratch::run_config(), path, 4).stats.host_ns == 0);
}

TEST_CASE("the simulator owns its config: the caller's may change or go before the run", "[sim]") {
  Scratch s;
  const auto trace = write_trace(s, 2, {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}})});
  auto config = std::make_unique<config::RunConfig>(simtest::parse(Scratch::run_config()));
  REQUIRE(config->per_kernel);
  Simulator sim(*config, trace, 2);
  config->per_kernel = false; // read at every kernel's end: a reference would see this
  config.reset();
  const Stats& stats = sim.run();
  CHECK(stats.kernel_rows.size() == 2);
}

namespace {

// Discards big pages 0-3 once kernel 0 ends; with params {"prefetch": true} prefetches them
// once kernel 1 ends.
class DiscardFirstPages : public policies::IPolicy {
public:
  DiscardFirstPages(const nlohmann::json& params, const std::string&)
      : prefetch_(params.value("prefetch", false)) {}
  void on_kernel_end(const policies::KernelEndEvent& e, policies::Actions& out) override {
    const policies::Range pages{kBase, 4 * kBigPageSize};
    if (e.kernel == 0) out.push_back({policies::ActionKind::kDiscard, pages, kHost});
    if (e.kernel == 1 && prefetch_)
      out.push_back({policies::ActionKind::kPrefetch, pages, gpu_processor(0)});
  }

private:
  bool prefetch_;
};
FAULTLINE_REGISTER_POLICY(DiscardFirstPages, "test-discard-first-pages");

} // namespace

TEST_CASE("a discarded page read since stays discarded to the driver until its first write",
          "[sim][discard]") {
  // As the GPU does (experiments/live/data/h200-discard-history/): kernel 0 writes big pages
  // 0-7, the policy discards 0-3, kernel 1 reads them (a first touch's cost), kernel 2 writes
  // them: resident, yet each faults and pays the discarded cost. A prefetch in between undoes
  // the discard, as a write does: kernel 3's second write is free.
  Scratch s;
  const auto touching = [](Time start, unsigned pages, AccessType type) {
    std::vector<std::pair<uint64_t, Time>> at;
    for (unsigned p = 0; p < pages; ++p) at.push_back({p, 0});
    trace::KernelRecord k = kernel(start, 1000, at);
    for (trace::Access& a : k.accesses) a.type = type;
    return k;
  };
  const std::string path = write_trace(
      s, 1,
      {touching(0, 8, AccessType::kWrite), touching(100000, 4, AccessType::kRead),
       touching(200000, 4, AccessType::kWrite), touching(300000, 4, AccessType::kWrite)});
  const auto run = [&](Time discarded_ns, bool prefetch) {
    s.write("gpus/simgpu.json", Scratch::gpu_profile({{"populate_ns", 500},
                                                      {"discarded_resident_fault_ns", discarded_ns},
                                                      {"discarded_fault_ns", discarded_ns}}));
    nlohmann::json cfg = Scratch::run_config({{"prefetch", false}}, "test-discard-first-pages");
    cfg["policy"]["params"] = {{"prefetch", prefetch}};
    return simulate(cfg, path, 4);
  };
  const Outcome cheap = run(500, false), dear = run(100'500, false);
  CHECK(dear.stats.discarded_read_refaults == 4);
  CHECK(dear.stats.discarded_refaults == 4);
  CHECK(dear.stats.faults == cheap.stats.faults);
  CHECK(dear.stats.faults == 8 + 4 + 4); // kernel 2 faults on resident pages; kernel 3 does not
  CHECK(dear.end - cheap.end == 4 * 100'000);
  const Outcome prefetched = run(100'500, true);
  CHECK(prefetched.stats.discarded_read_refaults == 4);
  CHECK(prefetched.stats.discarded_refaults == 0);
  CHECK(prefetched.stats.faults == 8 + 4);
}

TEST_CASE("synth pages: faults beside pages the GPU holds fill the block, its runs copied as one; "
          "the same faults into an empty block copy a run each",
          "[sim][synth]") {
  Scratch s;
  // A link whose copies cost mostly their overhead: 50 us each, 100 GB/s.
  const nlohmann::json curve = {{"overhead_ns", 50000}, {"bandwidth_gbps", {{4096, 100.0}}}};
  s.write("links/simlink.json",
          {{"name", "sim test link"}, {"kind", "pcie"}, {"forward", curve}, {"reverse", curve}});
  // 16 odd 64 KB pages of each of 4 blocks; beside the 16 even ones held or into empty blocks.
  auto touch_kernel = [&](uint32_t held_step, const std::string& name) {
    synth::Params p;
    p.pattern = "pages";
    p.footprint = 4 * kBlockSize;
    p.touch_first = 1;
    p.touch_step = 2;
    p.held_step = held_step;
    const std::string path = s.file(name);
    synth::write_trace(p, path, "test");
    const Outcome o = simulate(Scratch::run_config(), path, 8);
    return std::make_pair(o.stats.kernel_rows.back(), o.stats);
  };
  const auto [filled, filled_stats] = touch_kernel(2, "filled.fltrace");
  const auto [part, part_stats] = touch_kernel(0, "part.fltrace");
  CHECK(filled.accesses == 4 * 16);
  CHECK(part.accesses == 4 * 16);
  CHECK(filled_stats.pages_h2d == 4 * kPagesPerBlock); // the held half, then the rest
  CHECK(part_stats.pages_h2d == 4 * 16 * kPagesPerBigPage);
  // 16 copies a block in part, one a filled block (the batch's CPU side is under 120 us).
  CHECK(part.end - part.start >= 4 * 16 * 50000);
  CHECK(filled.end - filled.start < 4 * (50000 + 16 * kBigPageSize / 100) + 120000);
}

TEST_CASE("synth pages: a page outside the block is refused with its key", "[sim][synth]") {
  synth::Params p;
  CHECK_THROWS_WITH(synth::params_from_json({{"pattern", "pages"}, {"touch_first", 32}}, "opts"),
                    Catch::Matchers::Contains("$.touch_first") && Catch::Matchers::Contains("31"));
  CHECK_THROWS_WITH(synth::params_from_json({{"pattern", "pages"}, {"held_step", 33}}, "opts"),
                    Catch::Matchers::Contains("$.held_step"));
}

TEST_CASE("small device allocations share the chunks they span, as the footprint counts them",
          "[sim]") {
  Scratch s;
  const std::string path = s.file("t.fltrace");
  {
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 2 * kBlockSize, 0, 0});
    // Three device allocations of a few KB in one 2 MB chunk (the driver packs them), one of a
    // chunk and a half across two more.
    const Addr device = kBase + 64 * kBlockSize;
    w.write(trace::AllocRecord{2, trace::MemoryKind::kDevice, device, 4096, 0, 0});
    w.write(trace::AllocRecord{3, trace::MemoryKind::kDevice, device + 4096, 25344, 0, 0});
    w.write(trace::AllocRecord{4, trace::MemoryKind::kDevice, device + 32768, 4, 0, 0});
    w.write(trace::AllocRecord{5, trace::MemoryKind::kDevice, device + kBlockSize,
                               kBlockSize + kBlockSize / 2, 0, 0});
    w.write(kernel(0, 1000, {{0, 0}, {32, 0}}));
    w.write(trace::FreeRecord{3, 2000});
    w.write(kernel(3000, 1000, {{0, 0}, {32, 0}}));
    w.close();
  }
  // The footprint: 2 managed chunks and 3 device ones. Five chunks hold it without an eviction;
  // a chunk per device allocation would have needed six.
  CHECK(trace::compute_stats(path).footprint_chunks == 5);
  const Outcome fits = simulate(Scratch::run_config(), path, 5);
  CHECK(fits.stats.evictions == 0);
  CHECK(fits.stats.faults == 2);
  // With four, the managed blocks take turns.
  const Outcome short_one = simulate(Scratch::run_config(), path, 4);
  CHECK(short_one.stats.evictions > 0);
}
