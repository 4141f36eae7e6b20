// Several GPUs: topology parsing and routing, contention on shared links, the victim cache on a
// neighbour and its reclaim, randomized invariants, and two-job simulations.
#include "sim/core/error.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim/topology/topology.h"
#include "sim/uvm/migrator.h"
#include "sim_fixture.h"
#include "source_dir.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <random>

using namespace faultline;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

config::LinkProfile flat(const std::string& kind, double gbps) {
  config::LinkCurve c;
  c.overhead_ns = 0;
  c.points = {{4096, gbps}};
  return {kind, kind, c, c};
}

config::TopologySpec::Gpu gpu(const std::string& name) {
  config::GpuProfile p;
  p.eviction_ns = 1000;
  return {name, p};
}

// host - GPU0, GPU1, GPU2 on their own PCIe links; NVLink GPU0-GPU1 and GPU1-GPU2 only.
config::TopologySpec chain() {
  return {"chain",
          {gpu("GPU0"), gpu("GPU1"), gpu("GPU2")},
          {},
          {{"host", "GPU0", flat("pcie", 1), 1},
           {"host", "GPU1", flat("pcie", 1), 1},
           {"host", "GPU2", flat("pcie", 1), 1},
           {"GPU0", "GPU1", flat("nvlink", 10), 1},
           {"GPU1", "GPU2", flat("nvlink", 10), 2}}};
}

json topology_config(const json& topology) {
  return {{"topology", topology},
          {"capacity", {{"fraction_of_footprint", 1.0}}},
          {"policy", {{"name", "ondemand"}}}};
}

std::string config_error(const json& doc) {
  try {
    config::parse_run_config(doc, "test.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("routes take the widest path and never pass through a third GPU", "[topology]") {
  Topology t(chain());
  CHECK(t.route(gpu_processor(0), gpu_processor(1)).hops().size() == 1);
  // GPU0 -> GPU2 has no direct NVLink and may not cross GPU1: it goes through the host.
  const Route& r = t.route(gpu_processor(0), gpu_processor(2));
  REQUIRE(r.hops().size() == 2);
  CHECK(r.hops()[0]->name() == "PCIe GPU0->host");
  CHECK(r.hops()[1]->name() == "PCIe host->GPU2");
  CHECK(t.nvlink_neighbours(1) == std::vector<unsigned>{2, 0}); // two links to GPU2 are wider
  CHECK(t.nvlink_neighbours(0) == std::vector<unsigned>{1});
  // Link counts multiply bandwidth: 2 MB over two 10 GB/s links vs one.
  CHECK(t.route(gpu_processor(1), gpu_processor(2)).transfer(0, kBlockSize, "t").end ==
        kBlockSize / 20 + 1);
  CHECK(t.route(gpu_processor(0), gpu_processor(1)).transfer(0, kBlockSize, "t").end ==
        kBlockSize / 10 + 1);
}

TEST_CASE("routes that share a link contend on it, others run in parallel", "[topology]") {
  config::TopologySpec spec = {"switch",
                               {gpu("GPU0"), gpu("GPU1"), gpu("GPU2")},
                               {"sw"},
                               {{"host", "sw", flat("pcie", 1), 1},
                                {"sw", "GPU0", flat("pcie", 1), 1},
                                {"sw", "GPU1", flat("pcie", 1), 1},
                                {"host", "GPU2", flat("pcie", 1), 1}}};
  Topology t(spec);
  const Transfer a = t.route(kHost, gpu_processor(0)).transfer(0, 1000000, "a");
  const Transfer b = t.route(kHost, gpu_processor(1)).transfer(0, 1000000, "b");
  const Transfer c = t.route(kHost, gpu_processor(2)).transfer(0, 1000000, "c");
  CHECK(a.start == 0);
  CHECK(b.start == a.end); // host->sw is shared
  CHECK(c.start == 0);     // its own link
  // The other direction is independent (full duplex).
  CHECK(t.route(gpu_processor(0), kHost).transfer(0, 1000, "d").start == 0);
}

TEST_CASE("a topology whose processors cannot all reach each other is refused", "[topology]") {
  config::TopologySpec spec = {
      "split", {gpu("GPU0"), gpu("GPU1")}, {}, {{"host", "GPU0", flat("pcie", 1), 1}}};
  CHECK_THROWS_WITH(Topology(spec), Contains("no route from host to GPU1"));
}

TEST_CASE("the shipped topology presets parse and route", "[topology][config]") {
  for (const char* name : {"p3.8xlarge", "h200x2", "h200x4", "h200x8", "pcie-4gpu"}) {
    INFO(name);
    const config::RunConfig c = config::parse_run_config(topology_config(name), "test.json");
    Topology t(config::machine_topology(c));
    CHECK(t.gpus() == c.gpus);
    CHECK(c.resolved["topology"]["name"] == name);
  }
  const config::RunConfig p3 = config::parse_run_config(topology_config("p3.8xlarge"), "t");
  Topology t(config::machine_topology(p3));
  CHECK(t.nvlink_neighbours(0) == std::vector<unsigned>{3, 1, 2}); // NV2 to GPU3 first
  const config::RunConfig box = config::parse_run_config(topology_config("pcie-4gpu"), "t");
  Topology pcie(config::machine_topology(box));
  CHECK(pcie.nvlink_neighbours(0).empty());
  CHECK(pcie.route(gpu_processor(0), gpu_processor(1)).hops().size() == 2); // via its switch
  CHECK(pcie.route(gpu_processor(0), gpu_processor(2)).hops().size() == 4); // via the host
}

TEST_CASE("topology and neighbour-job config errors say where and what", "[topology][config]") {
  const json gpus =
      json::array({{{"name", "A"}, {"profile", "h200"}}, {{"name", "B"}, {"profile", "h200"}}});
  auto topo = [&](const json& links) {
    return json{{"name", "x"}, {"gpus", gpus}, {"links", links}};
  };
  const json host_a = {{"from", "host"}, {"to", "A"}, {"link", "h200-host"}};
  const json host_b = {{"from", "host"}, {"to", "B"}, {"link", "h200-host"}};
  CHECK_THAT(config_error(topology_config(
                 topo({host_a, {{"from", "host"}, {"to", "C"}, {"link", "h200-host"}}}))),
             Contains("$.topology.links[1].to") && Contains("unknown node \"C\"") &&
                 Contains("host, A, B"));
  CHECK_THAT(config_error(topology_config(topo({host_a, host_b, host_a}))),
             Contains("$.topology.links[2].to") && Contains("a second link between host and A"));
  CHECK_THAT(config_error(topology_config(
                 topo({host_a, {{"from", "A"}, {"to", "B"}, {"link", "nvlink4"}, {"count", 0}}}))),
             Contains("links[1].count") && Contains("1 to 64"));
  CHECK_THAT(config_error(
                 topology_config(topo({host_a, {{"from", "A"}, {"to", "B"}, {"link", "nosuch"}}}))),
             Contains("links[1].link") && Contains("unknown links profile \"nosuch\""));
  CHECK_THAT(config_error(topology_config("nosuch")),
             Contains("$.topology") && Contains("h200x2") && Contains("p3.8xlarge"));
  json with_gpu = topology_config("h200x2");
  with_gpu["gpu"] = "h200";
  CHECK_THAT(config_error(with_gpu), Contains("$.gpu") && Contains("in the topology"));
  json bad_key = topology_config(topo({host_a, host_b}));
  bad_key["topology"]["gpus"][0]["memory"] = 1;
  CHECK_THAT(config_error(bad_key),
             Contains("$.topology.gpus[0].memory") && Contains("unknown key"));

  json job = topology_config("h200x2");
  job["neighbour_jobs"] = {
      {{"name", "n"},
       {"trace", std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace"},
       {"gpu", 0},
       {"policy", {{"name", "ondemand"}}},
       {"capacity", {{"spare_fraction", 0.2}}}}};
  CHECK_THAT(config_error(job), Contains("$.neighbour_jobs[0].gpu") && Contains("already runs"));
  job["neighbour_jobs"][0]["gpu"] = 2;
  CHECK_THAT(config_error(job), Contains("$.neighbour_jobs[0].gpu") && Contains("GPUs 0 to 1"));
  job["neighbour_jobs"][0]["gpu"] = 1;
  job["neighbour_jobs"][0]["trace"] = "no/such.fltrace";
  CHECK_THAT(config_error(job),
             Contains("$.neighbour_jobs[0].trace") && Contains("does not exist"));
  job["neighbour_jobs"][0]["trace"] =
      std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  job["neighbour_jobs"][0]["capacity"] = {{"spare_fraction", 1.0}};
  CHECK_THAT(config_error(job), Contains("capacity.spare_fraction") &&
                                    Contains("expected at least 0 and less than 1, got 1.0"));
  job["neighbour_jobs"][0]["capacity"] = {{"spare_fraction", 0.5}};
  job["neighbour_jobs"][0]["policy"] = {{"name", "nosuch"}};
  CHECK_THAT(config_error(job), Contains("$.neighbour_jobs[0].policy.name") && Contains("harvest"));
}

namespace {

struct TwoGpus {
  explicit TwoGpus(uint64_t chunks0, uint64_t chunks1)
      : memory(std::vector<uint64_t>{chunks0, chunks1}) {
    driver.peer_reserve_bytes = 2 * kBlockSize;
  }
  config::TopologySpec spec = {"two",
                               {gpu("GPU0"), gpu("GPU1")},
                               {},
                               {{"host", "GPU0", flat("pcie", 1), 1},
                                {"host", "GPU1", flat("pcie", 1), 1},
                                {"GPU0", "GPU1", flat("nvlink", 10), 1}}};
  MemoryModel memory;
  Topology topology{spec};
  config::DriverConfig driver;
  Stats stats0, stats1;
  Migrator own{memory, topology, spec.gpus[0].profile, driver, stats0};
  Migrator neighbour{memory, topology, spec.gpus[1].profile, driver, stats1};
};

} // namespace

TEST_CASE("a block evicted to the neighbour is written back and dropped on reclaim",
          "[multigpu][memory]") {
  TwoGpus m(2, 4);
  m.memory.add_managed(0, kBlockSize, 0);              // GPU0's job
  m.memory.add_managed(1ull << 48, 4 * kBlockSize, 1); // GPU1's job
  VaBlock& b = *m.memory.find(0);
  m.own.to_gpu(b, 0, PageMask::range(0, kPagesPerBlock), {}, 0, "t");
  REQUIRE(m.own.peer_has_room(1)); // 4 free > 2 reserved
  const Time landed = m.own.to_peer(b, 0, 1, PageMask::range(0, kPagesPerBlock), 0, "evict");
  m.memory.check_invariants();
  CHECK(b.chunk[1]);
  CHECK(!b.chunk[0]);
  CHECK(m.memory.foreign_chunks(1) == 1);
  CHECK(b.host_backup.count() == kPagesPerBlock);
  CHECK(b.backup_ready_at > landed); // written back after it landed, over GPU1's PCIe link
  CHECK(m.stats0.pages_written_back == kPagesPerBlock);
  // GPU1's own job fills its memory: the harvested block goes first, without a copy.
  for (uint64_t i = 0; i < 4; ++i) {
    VaBlock& own = *m.memory.find((1ull << 48) / kBlockSize + i);
    const Time t = m.neighbour.make_room(1, 0, &own);
    if (i == 3) CHECK(t == b.backup_ready_at); // full: waits for the write-back, copies nothing
    m.neighbour.to_gpu(own, 1, PageMask::range(0, 16), {}, t, "t");
    m.memory.check_invariants();
  }
  CHECK(m.stats1.reclaims_dropped == 1);
  CHECK(m.stats1.pages_d2h == 0);
  CHECK(b.resident[kHost].count() == kPagesPerBlock); // the data is on the host again
  CHECK(m.memory.foreign_chunks(1) == 0);
  CHECK(!m.own.peer_has_room(1));
}

TEST_CASE("a fault on a block held by the neighbour pulls it over NVLink and frees the peer",
          "[multigpu][memory]") {
  TwoGpus m(2, 8);
  m.memory.add_managed(0, kBlockSize, 0);
  VaBlock& b = *m.memory.find(0);
  m.own.to_gpu(b, 0, PageMask::range(0, kPagesPerBlock), {}, 0, "t");
  const Time landed = m.own.to_peer(b, 0, 1, PageMask::range(0, kPagesPerBlock), 0, "evict");
  const Time back = m.own.to_gpu(b, 0, PageMask::range(0, kPagesPerBlock), {}, landed, "fault");
  CHECK(back == landed + kBlockSize / 10 + 1); // NVLink at 10 GB/s, not PCIe at 1
  CHECK(m.stats0.pages_peer_in == kPagesPerBlock);
  CHECK(m.stats0.pages_h2d == 0);
  CHECK(!b.chunk[1]); // exclusive: the neighbour's copy is gone
  CHECK(b.host_backup.none());
  m.memory.check_invariants();
}

TEST_CASE("randomized operations on several GPUs keep every invariant", "[multigpu][invariants]") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    TwoGpus m(1 + rng() % 4, 3 + rng() % 5);
    const Bytes size = (3 + rng() % 6) * kBlockSize;
    m.memory.add_managed(0, size, 0);
    m.memory.add_managed(1ull << 48, size, 1);
    uint64_t pages = 0;
    for (Addr base : {Addr{0}, Addr{1} << 48})
      m.memory.for_each_block(base, size,
                              [&](VaBlock& b, const PageMask&) { pages += b.allocated.count(); });
    const uint64_t reserve = m.driver.peer_reserve_bytes / kBlockSize;
    Time now = 0;
    for (int step = 0; step < 500; ++step) {
      const unsigned job = rng() % 2;
      Migrator& mig = job ? m.neighbour : m.own;
      VaBlock* b =
          m.memory.find((job ? (1ull << 48) / kBlockSize : 0) + rng() % (size / kBlockSize));
      const PageMask pages_here = PageMask::range(rng() % 256, 1 + rng() % 256);
      const unsigned other = 1 - job;
      switch (rng() % 5) {
      case 0:
      case 1:
        if (!b->chunk[job]) now = mig.make_room(job, now, b);
        now = mig.to_gpu(*b, job, pages_here, pages_here, now, "t");
        break;
      case 2:
        if (b->chunk[job] && mig.peer_has_room(other)) {
          now = mig.to_peer(*b, job, other, pages_here, now, "t");
          REQUIRE(m.memory.chunks_free(other) >= reserve); // the neighbour keeps its reserve
        }
        break;
      case 3:
        if (!b->chunk[other] && mig.peer_has_room(other)) {
          mig.stage_on_peer(*b, other, pages_here & b->resident[kHost], now);
          REQUIRE(m.memory.chunks_free(other) >= reserve);
        }
        break;
      default:
        now = mig.to_host(*b, job, pages_here, now, "t");
      }
      m.memory.check_invariants(); // one place per page, capacities, backups, foreign counts
      uint64_t accounted = 0;
      for (Addr base : {Addr{0}, Addr{1} << 48})
        m.memory.for_each_block(base, size, [&](VaBlock& blk, const PageMask&) {
          accounted += blk.unpopulated().count();
          for (ProcessorId p = 0; p <= 2; ++p) accounted += blk.resident[p].count();
        });
      REQUIRE(accounted == pages); // bytes are conserved
    }
  }
}

namespace {

// Two synthetic jobs on the h200x2 preset: GPU0 oversubscribed, GPU1 with spare memory.
json two_job_config(const std::string& policy, const std::string& neighbour_trace, double spare) {
  return {{"topology", "h200x2"},
          {"capacity", {{"fraction_of_footprint", 0.5}}},
          {"policy", {{"name", policy}, {"params", {{"reserve_chunks", 4}}}}},
          {"driver", {{"peer_reserve_bytes", 8 << 20}}},
          {"neighbour_jobs",
           {{{"name", "neighbour"},
             {"trace", neighbour_trace},
             {"gpu", 1},
             {"policy", {{"name", "ondemand"}}},
             {"capacity", {{"spare_fraction", spare}}}}}}};
}

json run_two(const json& config, const std::string& trace) {
  SimRequest request;
  request.config_path = "two-job config";
  request.config_doc = config;
  request.trace_path = trace;
  request.check_invariants = true;
  return run_sim(request);
}

// The run's own trace (streaming, 128 MB) and a DNN-like neighbour's, in `dir`.
void write_two_traces(const fltest::TempDir& dir, uint32_t own_iterations, Bytes other_footprint,
                      uint32_t other_iterations) {
  synth::Params own;
  own.pattern = "stream";
  own.footprint = 128ull << 20;
  own.iterations = own_iterations;
  synth::write_trace(own, dir.file("own.fltrace"), "test");
  synth::Params other;
  other.pattern = "dnn";
  other.footprint = other_footprint;
  other.iterations = other_iterations;
  synth::write_trace(other, dir.file("other.fltrace"), "test");
}

} // namespace

TEST_CASE("two jobs: harvesting a neighbour's spare memory beats host-only eviction",
          "[multigpu][sim]") {
  fltest::TempDir dir;
  write_two_traces(dir, 3, 64ull << 20, 2);
  const std::string trace = dir.file("own.fltrace");

  json params = {{"reserve_chunks", 4}, {"evict_to_peer", false}};
  json host_only = two_job_config("harvest", dir.file("other.fltrace"), 0.6);
  host_only["policy"]["params"] = params;
  const json base = run_two(host_only, trace);
  const json harvest = run_two(two_job_config("harvest", dir.file("other.fltrace"), 0.6), trace);
  const json& h = harvest["results"];
  CHECK(base["results"]["peers"]["evictions_to_peer"] == 0);
  CHECK(h["peers"]["evictions_to_peer"].get<uint64_t>() > 0);
  CHECK(h["peers"]["bytes_from_peer"].get<uint64_t>() > 0);
  CHECK(h["total_time_ns"].get<int64_t>() < base["results"]["total_time_ns"].get<int64_t>());
  REQUIRE(harvest["neighbour_jobs"].size() == 1);
  CHECK(harvest["neighbour_jobs"][0]["results"]["kernels"].get<uint64_t>() > 0);
  CHECK(harvest["config"]["neighbour_jobs"][0]["capacity"]["resolved_bytes"].get<uint64_t>() > 0);
  // Same inputs, same bytes out.
  CHECK(run_two(two_job_config("harvest", dir.file("other.fltrace"), 0.6), trace).dump() ==
        harvest.dump());
  // No spare memory at the neighbour's peak: it harvests while the neighbour is not yet at its
  // peak, and the neighbour takes its memory back when it needs it.
  const json tight = run_two(two_job_config("harvest", dir.file("other.fltrace"), 0.0), trace);
  const json& back = tight["neighbour_jobs"][0]["results"]["peers"];
  CHECK(back["reclaims_dropped"].get<uint64_t>() + back["reclaims_copied"].get<uint64_t>() > 0);
  // A reserve larger than the neighbour: nothing goes there.
  json reserved = two_job_config("harvest", dir.file("other.fltrace"), 0.6);
  reserved["driver"]["peer_reserve_bytes"] = 1ull << 40;
  CHECK(run_two(reserved, trace)["results"]["peers"]["evictions_to_peer"] == 0);
}

TEST_CASE("a repeating neighbour runs until the run's job ends, idle GPUs offer what is given",
          "[multigpu][sim]") {
  fltest::TempDir dir;
  write_two_traces(dir, 6, 16ull << 20, 1);
  json config = two_job_config("ondemand", dir.file("other.fltrace"), 0.5);
  config["policy"]["params"] = json::object();
  config["neighbour_jobs"][0]["repeat"] = true;
  config["neighbour_jobs"][0]["policy"] = {{"name", "oracle"}}; // reads its trace: fresh per pass
  const json out = run_two(config, dir.file("own.fltrace"));
  const json& n = out["neighbour_jobs"][0];
  CHECK(n["passes"].get<uint64_t>() > 1);
  CHECK(n["results"]["total_time_ns"].get<int64_t>() >=
        out["results"]["total_time_ns"].get<int64_t>());
  config["neighbour_jobs"][0]["repeat"] = false;
  CHECK(run_two(config, dir.file("own.fltrace"))["neighbour_jobs"][0]["passes"] == 1);

  // No neighbour job: GPU 1 offers only what idle_gpus says, less the reserve.
  json idle = two_job_config("harvest", dir.file("other.fltrace"), 0.5);
  idle.erase("neighbour_jobs");
  idle["idle_gpus"] = {{{"gpu", 1}, {"bytes", 8 << 20}}}; // 4 chunks, all of them the reserve
  CHECK(run_two(idle, dir.file("own.fltrace"))["results"]["peers"]["evictions_to_peer"] == 0);
  idle["idle_gpus"][0]["bytes"] = 64 << 20;
  CHECK(run_two(idle, dir.file("own.fltrace"))["results"]["peers"]["evictions_to_peer"]
            .get<uint64_t>() > 0);
  idle["idle_gpus"][0]["gpu"] = 0;
  CHECK_THROWS_WITH(run_two(idle, dir.file("own.fltrace")),
                    Contains("$.idle_gpus[0].gpu") && Contains("1 to 1"));
}

TEST_CASE("hierarchical eviction: the driver's own victims go to the neighbour with room",
          "[multigpu][sim]") {
  fltest::TempDir dir;
  write_two_traces(dir, 3, 64ull << 20, 2);
  json stock = two_job_config("ondemand", dir.file("other.fltrace"), 0.6);
  stock["policy"]["params"] = json::object();
  json hierarchy = stock;
  hierarchy["driver"]["hierarchical_eviction"] = true;
  const json a = run_two(stock, dir.file("own.fltrace"));
  const json b = run_two(hierarchy, dir.file("own.fltrace"));
  CHECK(a["results"]["peers"]["evictions_to_peer"] == 0);
  CHECK(b["results"]["peers"]["evictions_to_peer"].get<uint64_t>() > 0);
  CHECK(b["results"]["evictions"].get<uint64_t>() >=
        b["results"]["peers"]["evictions_to_peer"].get<uint64_t>());
  CHECK(b["results"]["total_time_ns"].get<int64_t>() <
        a["results"]["total_time_ns"].get<int64_t>());
}

TEST_CASE("budget mode: staging a block on the neighbour costs a prefetch call of host data",
          "[multigpu][sim]") {
  // The live replay stages with one cudaMemPrefetchAsync per 2 MB block on its one migration
  // stream, and each call pays the driver's per-call work for host data (prefetch_call_ns +
  // prefetch_copy_extra_ns) before its copy; in budget mode the simulator must charge it too, or
  // multi-path prefetch looks cheaper than on the GPU.
  fltest::TempDir dir;
  write_two_traces(dir, 3, 64ull << 20, 1);
  const Time call_us = 300, extra_us = 700;
  json topology = json::parse(
      std::ifstream(std::string(FAULTLINE_SOURCE_DIR) + "/configs/topologies/h200x2.json"));
  for (json& g : topology["gpus"])
    g["profile"] = {{"profile", "h200x2"},
                    {"prefetch_call_ns", call_us * 1000},
                    {"prefetch_copy_extra_ns", extra_us * 1000}};
  SimRequest request;
  request.config_path = "two-job config";
  request.config_doc = {{"topology", topology},
                        {"capacity", {{"fraction_of_footprint", 0.5}, {"mode", "budget"}}},
                        {"policy", {{"name", "harvest"}, {"params", {{"reserve_chunks", 4}}}}},
                        {"driver", {{"peer_reserve_bytes", 8 << 20}, {"peer_write_back", false}}},
                        {"idle_gpus", {{{"gpu", 1}, {"bytes", 96 << 20}}}}};
  request.trace_path = dir.file("own.fltrace");
  request.timeline_path = dir.file("timeline.json");
  const json out = run_sim(request);
  REQUIRE(out["results"]["peers"]["bytes_staged_on_peer"].get<uint64_t>() > 0);
  // Every staging copy starts at least one call after the copies issued before it ended: they
  // are on the one stream, or (faults) in the kernel the policy acted after. Transfers are the
  // timeline's events with bytes, written in the order they are issued; times in microseconds.
  const json timeline = json::parse(std::ifstream(dir.file("timeline.json")));
  double last_end = -1;
  unsigned stages = 0;
  for (const json& e : timeline["traceEvents"]) {
    if (!e.contains("args") || !e["args"].contains("bytes")) continue;
    const double start = e["ts"].get<double>(), end = start + e["dur"].get<double>();
    if (e["name"] == "stage") {
      ++stages;
      if (last_end >= 0) CHECK(start - last_end >= static_cast<double>(call_us + extra_us) - 1);
    }
    last_end = std::max(last_end, end);
  }
  CHECK(stages > 0);
}
