// Helpers the simulator's tests share: a one-allocation trace of given kernels, a run of it, and
// an observer that sums the bytes on each link.
#pragma once

#include "sim/run/simulator.h"
#include "sim/trace/writer.h"
#include "sim_fixture.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

namespace simtest {

using namespace faultline;

constexpr Addr kBase = 0x10000000;

inline trace::KernelRecord kernel(Time start, Time duration,
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
inline std::string write_trace(const Scratch& s, unsigned blocks,
                               const std::vector<trace::KernelRecord>& kernels,
                               bool host_first = false) {
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

// `check_invariants`: verify the memory model after every record (slow on real traces, which
// tests of costs and counts need not pay).
inline Outcome simulate(const nlohmann::json& cfg, const std::string& trace, uint64_t chunks,
                        bool check_invariants = true) {
  const config::RunConfig config = simtest::parse(cfg);
  Simulator sim(config, trace, chunks);
  sim.set_check_invariants(check_invariants);
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

} // namespace simtest
