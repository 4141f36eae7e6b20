// The lower bound (sim/run/bound.h): Belady's MIN with bypass on hand-made traces whose minimum
// is known, what costs a copy (data, not a fresh page; device memory never), and, on synthetic
// traces under every policy and both capacity modes, that no simulated run beats it.
#include "sim/core/error.h"
#include "sim/run/bound.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"
#include "sim_fixture.h"
#include "source_dir.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

using namespace faultline;
using simtest::Scratch;

namespace {

constexpr Addr kBase = 0x10000000;
constexpr uint64_t kChunkPages = kBigPagesPerBlock;

// A kernel touching big pages [first, first + count) of the allocation at kBase.
trace::KernelRecord touch(Time start, uint64_t first, uint64_t count) {
  trace::KernelRecord k;
  k.name = "k";
  k.start = start;
  k.duration = 1000;
  for (uint64_t p = first; p < first + count; ++p)
    k.accesses.push_back({kBase / kBigPageSize + p, 0, AccessType::kRead});
  return k;
}

config::LinkProfile link_of_1_gbps() {
  config::LinkProfile l;
  l.forward.points = {{4096, 1.0}};
  return l;
}

struct Built {
  std::string path;
  trace::TraceWriter writer;
  explicit Built(const std::string& p) : path(p), writer(p, {{"source", "test"}}) {
    writer.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 3 * kBlockSize, 0, 0});
  }
};

} // namespace

TEST_CASE("bound: MIN keeps the page used again and bypasses the one that is not", "[bound]") {
  fltest::TempDir dir;
  Built t(dir.file("t.fltrace"));
  t.writer.write(touch(0, 0, kChunkPages));              // A: fresh, populated in place
  t.writer.write(touch(2000, kChunkPages, kChunkPages)); // B: fresh, not kept (used never again)
  t.writer.write(touch(4000, 0, kChunkPages));           // A again: still there
  t.writer.close();
  const LowerBound b = lower_bound(t.path, 0, 1, link_of_1_gbps(), 0);
  CHECK(b.min_pages_moved == 0);
  CHECK(b.references == 3 * kChunkPages);
  CHECK(b.all_resident_ns == 5000);
  CHECK(b.lower_bound_ns == 5000);
}

TEST_CASE("bound: pages used in turn beyond the capacity must move", "[bound]") {
  fltest::TempDir dir;
  Built t(dir.file("t.fltrace"));
  for (Time i = 0; i < 4; ++i) t.writer.write(touch(2000 * i, (i % 2) * kChunkPages, kChunkPages));
  t.writer.close();
  // A, B, A, B with room for one: A stays; B is fresh once, then holds data and comes back once.
  const LowerBound b = lower_bound(t.path, 0, 1, link_of_1_gbps(), 0);
  CHECK(b.min_pages_moved == kChunkPages);
  CHECK(b.transfer_ns == static_cast<Time>(kChunkPages * kBigPageSize)); // 1 byte per ns
  CHECK(b.lower_bound_ns == b.transfer_ns);
  CHECK(lower_bound(t.path, 0, 2, link_of_1_gbps(), 0).min_pages_moved == 0); // room for both
}

TEST_CASE("bound: data the GPU had comes back only after it left, over the other direction, "
          "or remotely at a whole transfer a touch",
          "[bound]") {
  fltest::TempDir dir;
  Built t(dir.file("t.fltrace"));
  for (Time i = 0; i < 4; ++i) t.writer.write(touch(2000 * i, (i % 2) * kChunkPages, kChunkPages));
  t.writer.close();
  config::LinkProfile link;
  link.forward.points = {{4096, 1.0}};
  link.forward.overhead_ns = static_cast<Time>(kChunkPages * kBigPageSize); // a 2 MB copy's time
  link.reverse.points = {{4096, 0.25}};
  const LowerBound b = lower_bound(t.path, 0, 1, link, 0);
  // B comes back once, a repeat: the GPU touched it in the same epoch.
  CHECK(b.min_pages_moved == kChunkPages);
  CHECK(b.min_repeat_pages == kChunkPages);
  const double page = kBigPageSize;
  const double in = page + page; // the bytes, and a 32nd of a transfer's overhead
  const double out = 4 * page;
  const double remote = page + kChunkPages * page;
  CHECK(b.transfer_ns == static_cast<Time>(in * kChunkPages));
  const double weighed = out / (out + remote - in) * remote * kChunkPages;
  CHECK(std::abs(static_cast<double>(b.duplex_ns) - weighed) <= 1);
  CHECK(b.duplex_ns > b.transfer_ns);
  CHECK(b.duplex_ns < static_cast<Time>(out * kChunkPages)); // a remote touch is an escape
  CHECK(b.lower_bound_ns == b.duplex_ns);
  // A host touch between makes B's return a first copy of the host's data: no repeat.
  Built h(dir.file("h.fltrace"));
  h.writer.write(touch(0, 0, kChunkPages));
  h.writer.write(touch(2000, kChunkPages, kChunkPages));
  h.writer.write(trace::HostAccessRecord{3000, kBase + kBlockSize, kBlockSize, AccessType::kWrite});
  h.writer.write(touch(4000, 0, kChunkPages));
  h.writer.write(touch(6000, kChunkPages, kChunkPages));
  h.writer.close();
  const LowerBound hb = lower_bound(h.path, 0, 1, link, 0);
  CHECK(hb.min_pages_moved == kChunkPages);
  CHECK(hb.min_repeat_pages == 0);
  CHECK(hb.duplex_ns <= hb.transfer_ns);
}

TEST_CASE("bound: the host's touch forces a copy back; a freed page is fresh again", "[bound]") {
  fltest::TempDir dir;
  SECTION("host touch") {
    Built t(dir.file("t.fltrace"));
    t.writer.write(touch(0, 0, kChunkPages));
    t.writer.write(trace::HostAccessRecord{1500, kBase, 4 * kBigPageSize, AccessType::kWrite});
    t.writer.write(touch(2000, 0, kChunkPages));
    t.writer.close();
    CHECK(lower_bound(t.path, 0, 4, link_of_1_gbps(), 0).min_pages_moved == 4);
  }
  SECTION("free and allocate again") {
    Built t(dir.file("t.fltrace"));
    t.writer.write(touch(0, 0, kChunkPages));
    t.writer.write(touch(1000, kChunkPages, kChunkPages));
    t.writer.write(trace::FreeRecord{1, 2000});
    t.writer.write(trace::AllocRecord{2, trace::MemoryKind::kManaged, kBase, kBlockSize, 2000, 0});
    t.writer.write(touch(3000, 0, kChunkPages));
    t.writer.close();
    CHECK(lower_bound(t.path, 0, 1, link_of_1_gbps(), 0).min_pages_moved == 0);
  }
  SECTION("device memory never moves") {
    Built t(dir.file("t.fltrace"));
    const Addr device = kBase + 8 * kBlockSize;
    t.writer.write(trace::AllocRecord{2, trace::MemoryKind::kDevice, device, kBlockSize, 0, 0});
    for (Time i = 0; i < 4; ++i) {
      trace::KernelRecord k = touch(2000 * i, (i % 2) * kChunkPages, kChunkPages);
      k.accesses.push_back({device / kBigPageSize, 0, AccessType::kRead});
      t.writer.write(k);
    }
    t.writer.close();
    CHECK(lower_bound(t.path, 0, 1, link_of_1_gbps(), 0).min_pages_moved == kChunkPages);
  }
}

TEST_CASE("bound: defined for one job on one GPU", "[bound]") {
  Scratch s;
  nlohmann::json config = Scratch::run_config();
  config["gpus"] = 2;
  s.write("two.json", config);
  fltest::TempDir dir;
  Built t(dir.file("t.fltrace"));
  t.writer.write(touch(0, 0, 1));
  t.writer.close();
  CHECK_THROWS_WITH(bound_document(s.file("two.json"), t.path, 0),
                    Catch::Contains("one job on one GPU"));
}

TEST_CASE("bound: no simulated run beats it, under any policy or capacity mode",
          "[bound][invariant]") {
  Scratch s;
  // The lent GPUs' shape: a copy to the host at a third of the rate to the GPU, and a transfer's
  // overhead worth a 2 MB block's third (configs/links/h200-host.json), so that the two
  // directions' part of the bound is its largest in many runs.
  const nlohmann::json to_gpu = {{"overhead_ns", 20000}, {"bandwidth_gbps", {{4096, 1.0}}}};
  const nlohmann::json to_host = {{"overhead_ns", 20000}, {"bandwidth_gbps", {{4096, 0.33}}}};
  s.write("links/simlink.json",
          {{"name", "slow way back"}, {"kind", "pcie"}, {"forward", to_gpu}, {"reverse", to_host}});
  int duplex_binds = 0;
  for (const char* pattern : {"random", "stream", "dnn"}) {
    for (uint64_t seed : {1, 2}) {
      synth::Params p;
      p.pattern = pattern;
      p.footprint = 64ull << 20;
      p.seed = seed;
      p.layers = 6;
      p.kernels_per_iteration = 8;
      const std::string trace = s.file(std::string(pattern) + std::to_string(seed) + ".fltrace");
      synth::write_trace(p, trace, "test");
      for (const char* policy : {"ondemand", "deepum", "pump", "oracle", "schedule"}) {
        for (const char* mode : {"driver", "budget", "program"}) {
          for (double fraction : {0.5, 0.75}) {
            // A random kernel touches every chunk: more than a budget holds at once.
            if (std::string(pattern) == "random" && std::string(mode) != "driver") continue;
            INFO(pattern << " seed " << seed << " " << policy << " " << mode << " " << fraction);
            nlohmann::json config = Scratch::run_config(nlohmann::json::object(), policy);
            config["capacity"] = {{"fraction_of_footprint", fraction}, {"mode", mode}};
            config.erase("per_kernel");
            s.write("run.json", config);
            SimRequest request;
            request.config_path = s.file("run.json");
            request.trace_path = trace;
            const nlohmann::json sim = run_sim(request)["results"];
            const nlohmann::json bound = bound_document(request.config_path, trace, 0)["bound"];
            CHECK(sim["total_time_ns"].get<Time>() >= bound["lower_bound_ns"].get<Time>());
            CHECK(sim["bytes_host_to_gpu"].get<uint64_t>() >=
                  bound["min_bytes_host_to_gpu"].get<uint64_t>());
            const Time duplex = bound["duplex_ns"].get<Time>();
            duplex_binds += duplex > bound["transfer_ns"].get<Time>() &&
                            duplex > bound["all_resident_ns"].get<Time>();
          }
        }
      }
    }
  }
  CHECK(duplex_binds > 10); // the check reaches the bound's tightest part
}

TEST_CASE("bound: a host-fed issue-time trace's bound leaves out the captured program's host "
          "faults, which the simulator takes out of its CPU gaps",
          "[bound][invariant]") {
  Scratch s;
  // host-stencil: the host writes the grid kernels wrote between sweeps; captured with memory
  // enough, so each such write faulted the pages back to the host inside the trace's CPU gaps.
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/host-stencil.fltrace";
  nlohmann::json config = Scratch::run_config(nlohmann::json::object(), "oracle");
  // The shipped H200 profile, under which the oracle outruns the captured host faults.
  const std::string configs = std::string(FAULTLINE_SOURCE_DIR) + "/configs/";
  for (const char* file : {"gpus/h200.json", "links/h200-host.json", "links/nvlink4.json"}) {
    std::ifstream in(configs + file);
    s.write(file, nlohmann::json::parse(in));
  }
  config["gpu"] = "h200";
  config["capacity"] = {{"fraction_of_footprint", 1.0}};
  config["iterations"] = 5;
  config.erase("per_kernel");
  s.write("run.json", config);
  SimRequest request;
  request.config_path = s.file("run.json");
  request.trace_path = trace;
  const Time sim = run_sim(request)["results"]["total_time_ns"].get<Time>();
  const Time bound = bound_document(request.config_path, trace, 0)["bound"]["lower_bound_ns"];
  CHECK(sim >= bound);
  // Priced at nothing, the captured faults leave the trace's own all-resident time: the oracle
  // at 100% runs below it, since it plays its own host faults in their place.
  const config::RunConfig c = config::load_run_config(request.config_path);
  const uint64_t chunks = trace::compute_stats(trace).footprint_chunks;
  config::LinkProfile free_link = c.host_link;
  free_link.reverse.points = {{kBigPageSize, 1e9}};
  free_link.reverse.overhead_ns = 0;
  const LowerBound priced_at_nothing = lower_bound(trace, 5, chunks, free_link, 0);
  CHECK(priced_at_nothing.all_resident_ns > bound);
  CHECK(sim < priced_at_nothing.all_resident_ns);
}

TEST_CASE("bound: the measured steps are bounded on their own, the set-up left out", "[bound]") {
  fltest::TempDir dir;
  const auto write = [&](const std::string& name, const nlohmann::json& program_ns) {
    nlohmann::json header = {
        {"source", "test"},
        {"steps",
         {{{"first_record", 2}, {"start_ns", 4000}}, {{"first_record", 4}, {"start_ns", 8000}}}}};
    if (!program_ns.is_null()) header["program_step_ns"] = program_ns;
    const std::string path = dir.file(name);
    trace::TraceWriter w(path, header);
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 3 * kBlockSize, 0, 0});
    w.write(touch(0, 0, kChunkPages));              // set-up: A, fresh
    w.write(touch(4000, kChunkPages, kChunkPages)); // step 0: B, fresh
    w.write(touch(6000, 0, kChunkPages));           // A: holds data, with room for one a copy
    w.write(touch(8000, kChunkPages, kChunkPages)); // step 1: B again
    w.write(touch(10000, 0, kChunkPages));          // A again
    w.close();
    return path;
  };
  const LowerBound b = lower_bound(write("p.fltrace", {3000, 3500}), 0, 1, link_of_1_gbps(), 0);
  const MeasuredBound& m = b.measured;
  CHECK(m.steps == 2);
  CHECK(m.program_ns == 6500);
  CHECK(m.gpu_ns == 4 * 1000);
  CHECK(m.all_resident_ns == 6500); // the program's own time for its steps
  // Room for one chunk: of A, B, A, B, A after the set-up's A, MIN keeps A and bypasses B, whose
  // second touch copies; less the capacity's pages, which the set-up could have brought.
  CHECK(b.min_pages_moved == kChunkPages);
  CHECK(m.min_pages_moved == kChunkPages);
  CHECK(m.transfer_ns == 0);
  CHECK(m.lower_bound_ns == 6500);
  // Without the program's own step times the kernels' time stands in.
  const LowerBound g = lower_bound(write("g.fltrace", nullptr), 0, 1, link_of_1_gbps(), 0);
  CHECK(g.measured.program_ns == 0);
  CHECK(g.measured.all_resident_ns == 4000);
  // No room at all: every copy of the steps counts, none could have come during the set-up.
  const LowerBound none = lower_bound(write("n.fltrace", nullptr), 0, 0, link_of_1_gbps(), 0);
  CHECK(none.measured.min_pages_moved == 3 * kChunkPages); // A, B, A: B's first is fresh
  CHECK(none.measured.transfer_ns == static_cast<Time>(3 * kChunkPages * kBigPageSize));
  CHECK(none.measured.lower_bound_ns == none.measured.transfer_ns);
}
