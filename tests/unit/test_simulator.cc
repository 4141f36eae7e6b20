#include "policies/registry.h"
#include "sim/config/reader.h"
#include "sim/core/error.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"
#include "sim/trace/writer.h"
#include "sim_fixture.h"
#include "source_dir.h"

#include <catch2/catch.hpp>

using namespace faultline;
using simtest::Scratch;

namespace {

constexpr Addr kBase = 0x10000000;

trace::KernelRecord kernel(Time start, Time duration,
                           std::vector<std::pair<uint64_t, Time>> pages) {
  trace::KernelRecord k;
  k.name = "k";
  k.start = start;
  k.duration = duration;
  for (auto [page, offset] : pages)
    k.accesses.push_back({kBase / kBigPageSize + page, offset, AccessType::kRead});
  return k;
}

// Writes a trace with one managed allocation of `blocks` VA blocks and the given kernels.
std::string write_trace(const Scratch& s, unsigned blocks,
                        const std::vector<trace::KernelRecord>& kernels, bool host_first = false) {
  const std::string path = s.file("t.fltrace");
  trace::TraceWriter w(path, {{"source", "test"}});
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, blocks * kBlockSize, 0, 0});
  if (host_first)
    w.write(trace::HostAccessRecord{0, kBase, blocks * kBlockSize, AccessType::kWrite});
  for (const auto& k : kernels) w.write(k);
  w.close();
  return path;
}

struct Outcome {
  Stats stats;
  Time end;
};

Outcome simulate(const nlohmann::json& cfg, const std::string& trace, uint64_t chunks) {
  const config::RunConfig config = simtest::parse(cfg);
  Simulator sim(config, trace, chunks);
  sim.set_check_invariants(true);
  Outcome o{sim.run(), 0};
  o.end = sim.end_time();
  return o;
}

// Sums bytes per link direction, to check them against the counters.
struct LinkBytes : TransferObserver {
  std::map<std::string, Bytes> bytes;
  Time last_start = 0;
  void on_transfer(const std::string& link, Bytes b, Transfer t, const char*) override {
    bytes[link] += b;
    CHECK(t.end > t.start);
  }
};

} // namespace

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
  // Without the cost (older profiles), the host's first touch is free.
  s.write("gpus/simgpu.json", Scratch::gpu_profile());
  CHECK(simulate(Scratch::run_config(), path, 4).stats.host_ns == 0);
}

TEST_CASE("budget mode: the kernel's chunks fit before it starts, oldest others leave first",
          "[sim][budget]") {
  Scratch s;
  // Three one-block kernels on a 2-chunk budget: the third evicts block 0 (the oldest) before
  // it starts, then faults only on its own block.
  const auto trace = write_trace(s, 3,
                                 {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}}),
                                  kernel(2000, 1000, {{64, 0}, {32, 0}})});
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, trace, 2);
  CHECK(o.stats.evictions == 1);
  CHECK(o.stats.pages_d2h == kPagesPerBigPage); // block 0's one big page, not block 1's
  CHECK(o.stats.faults == 3);
  CHECK(o.stats.peak_chunks == 2);
  // The eviction (5 us + 1 us + 65536 ns copy) runs before the third kernel starts.
  const KernelRow& third = o.stats.kernel_rows.at(2);
  CHECK(third.start >= o.stats.kernel_rows.at(1).end + 5000 + 1000 + 65536);
}

TEST_CASE("budget mode runs a kernel that needs more chunks than the budget in parts, as the "
          "replay does",
          "[sim][budget]") {
  Scratch s;
  const auto trace = write_trace(s, 3, {kernel(0, 1000, {{0, 0}, {32, 400}, {64, 800}})});
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, trace, 2);
  // Blocks 0 and 1, then 2 after block 0 left: two parts, one eviction, never over the budget.
  CHECK(o.stats.peak_chunks == 2);
  CHECK(o.stats.evictions == 1);
  CHECK(o.stats.faults == 3);
  REQUIRE(o.stats.kernel_rows.size() == 2);
  CHECK(o.stats.kernel_rows[0].index == o.stats.kernel_rows[1].index);
  CHECK(o.stats.kernel_rows[0].accesses == 2);
  CHECK(o.stats.kernel_rows[1].accesses == 1);
  CHECK(o.stats.compute_ns == 1000); // the parts share the kernel's compute time
  CHECK(o.stats.kernel_rows[1].start >= o.stats.kernel_rows[0].end);
}

TEST_CASE("budget mode: prefetches are one call per block on the migration stream, and the "
          "kernel waits for them",
          "[sim][budget]") {
  Scratch s;
  s.write("gpus/simgpu.json",
          Scratch::gpu_profile({{"prefetch_call_ns", 4000}, {"prefetch_populate_ns", 100}}));
  // pump prefetches the kernel's argument (2 unpopulated blocks) at launch.
  const std::string path = s.file("p.fltrace");
  {
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 2 * kBlockSize, 0, 0});
    trace::KernelRecord k = kernel(0, 1000, {{0, 0}, {32, 0}});
    k.args = {1};
    w.write(k);
    w.close();
  }
  nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), "pump");
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, path, 4);
  CHECK(o.stats.faults == 0);
  // Two calls of 4 us each, each populating 32 big pages at 100 ns: the kernel starts at 14.4 us.
  CHECK(o.stats.kernel_rows.at(0).start == 2 * (4000 + 32 * 100));
  CHECK(o.end == 2 * (4000 + 32 * 100) + 1000);
}

TEST_CASE("budget mode: each kernel pays the replay's launch, whatever the policy",
          "[sim][budget]") {
  Scratch s;
  s.write("gpus/simgpu.json", Scratch::gpu_profile({{"launch_ns", 10000}}));
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {}), kernel(1000, 1000, {})});
  for (const char* policy : {"ondemand", "deepum"}) {
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
    cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
    const Outcome o = simulate(cfg, trace, 1);
    const Time per_kernel = 10000;
    INFO(policy);
    CHECK(o.stats.kernel_rows.at(0).start == per_kernel);
    CHECK(o.stats.kernel_rows.at(1).start == o.stats.kernel_rows.at(0).end + per_kernel);
    cfg["capacity"] = {{"fraction_of_footprint", 1.0}}; // a prediction: the GPU's own rhythm
    CHECK(simulate(cfg, trace, 1).stats.kernel_rows.at(0).start == 0);
  }
}

TEST_CASE("budget mode keeps every invariant and the budget on random traces",
          "[sim][budget][invariants]") {
  Scratch s;
  uint64_t completed = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (const char* policy : {"ondemand", "pump", "deepum", "oracle"}) {
      synth::Params p;
      p.footprint = 24 * kBlockSize;
      p.iterations = 2;
      p.layers = 4;
      p.seed = seed;
      const std::string path = s.file("b.fltrace");
      synth::write_trace(p, path, "test");
      const trace::TraceStats ts = trace::compute_stats(path);
      nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
      cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
      const uint64_t chunks = std::max<uint64_t>(ts.footprint_chunks * (40 + seed * 7) / 100, 8);
      const config::RunConfig config = simtest::parse(cfg);
      Simulator sim(config, path, chunks);
      sim.set_check_invariants(true);
      INFO("seed " << seed << " policy " << policy << " chunks " << chunks);
      // A kernel larger than the budget runs in parts: every run completes.
      const Stats& st = sim.run();
      CHECK(st.peak_chunks <= chunks);
      ++completed;
    }
  }
  CHECK(completed >= 24); // most runs fit: the test is not vacuous
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

TEST_CASE("budget mode: a fault on a page DeepUM discarded costs the profile's discarded cost",
          "[sim][budget]") {
  Scratch s;
  // A real trace with allocator blocks, whose frees DeepUM discards (its pre-eviction's victims).
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), "deepum");
  cfg["capacity"] = {{"fraction_of_footprint", 0.75}, {"mode", "budget"}};
  const auto run = [&](Time discarded_ns) {
    s.write("gpus/simgpu.json", Scratch::gpu_profile({{"populate_ns", 500},
                                                      {"discarded_resident_fault_ns", discarded_ns},
                                                      {"discarded_fault_ns", discarded_ns}}));
    const uint64_t footprint = trace::compute_stats(trace).footprint_chunks;
    return simulate(cfg, trace, simtest::parse(cfg).capacity.chunks(footprint));
  };
  const Outcome cheap = run(500), dear = run(100'500);
  // The same decisions: costs change times, not which pages are discarded and faulted again.
  CHECK(dear.stats.discarded_pages == cheap.stats.discarded_pages);
  const uint64_t refaults[2] = {cheap.stats.discarded_refaults +
                                    cheap.stats.discarded_read_refaults,
                                dear.stats.discarded_refaults + dear.stats.discarded_read_refaults};
  REQUIRE(refaults[0] == refaults[1]);
  // Only writes pay it: the trace's GEMMs read pages DeepUM discarded (their operands, recorded
  // as reads), and those faults cost a first touch however dear the discarded cost. A page read
  // and written in one fault batch counts as written, and times move the batches' edges: the
  // split may move by a little.
  REQUIRE(cheap.stats.discarded_refaults > 1000);
  CHECK(cheap.stats.discarded_read_refaults > 1000);
  const auto written = {cheap.stats.discarded_refaults, dear.stats.discarded_refaults};
  CHECK(std::max(written) - std::min(written) < std::min(written) / 50);
  // Each written one is on the batch's CPU side, serial: 100 us more apiece.
  const Time extra = dear.end - cheap.end;
  CHECK(extra >= static_cast<Time>(std::min(written)) * 100'000 * 9 / 10);
  CHECK(extra <= static_cast<Time>(std::max(written)) * 100'000 * 11 / 10);
}

TEST_CASE("budget mode: a prefetch right after an eviction costs the profile's swap extra",
          "[sim][budget]") {
  Scratch s;
  synth::Params p;
  p.footprint = 48 * kBlockSize;
  p.iterations = 2;
  p.layers = 6;
  p.seed = 3;
  const std::string trace = s.file("swap.fltrace");
  synth::write_trace(p, trace, "test");
  const uint64_t chunks = trace::compute_stats(trace).footprint_chunks / 2;
  const auto run = [&](const char* policy, Time swap_ns) {
    s.write("gpus/simgpu.json", Scratch::gpu_profile({{"swap_extra_ns", swap_ns}}));
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
    cfg["capacity"] = {{"fraction_of_footprint", 0.5}, {"mode", "budget"}};
    return simulate(cfg, trace, chunks);
  };
  for (const char* policy : {"pump", "oracle"}) {
    INFO(policy);
    const Outcome apart = run(policy, 0), in_turn = run(policy, 100'000);
    // Costs move times, not choices: the same pages go back to the host.
    REQUIRE(in_turn.stats.pages_d2h == apart.stats.pages_d2h);
    REQUIRE(apart.stats.pages_d2h > 10 * kPagesPerBlock);
    // Each eviction made to prefetch a block adds 100 us on the stream, serial; those made before
    // a kernel (the budget's own) add nothing. Every eviction moves a page at least.
    const Time extra = in_turn.end - apart.end;
    CHECK(extra >= 100'000);
    CHECK(extra <= static_cast<Time>(apart.stats.pages_d2h) * 100'000);
  }
  // Ondemand prefetches nothing: the extra never applies.
  CHECK(run("ondemand", 100'000).end == run("ondemand", 0).end);
}
