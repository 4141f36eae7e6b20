// Shared by the simulator-level tests: profiles with round numbers, so expected times can be
// computed by hand, and synthetic traces in a temporary directory.
#pragma once

#include "sim/config/run_config.h"
#include "sim/run/simulator.h"
#include "test_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace simtest {

namespace fs = std::filesystem;

// A temporary directory with the round-number profiles below, named by FAULTLINE_CONFIGS.
class Scratch {
public:
  Scratch() {
    fs::create_directories(dir_.path() / "gpus");
    fs::create_directories(dir_.path() / "links");
    write("gpus/simgpu.json", gpu_profile());
    write("links/simlink.json", link_profile());
    setenv("FAULTLINE_CONFIGS", dir_.path().c_str(), 1);
  }
  ~Scratch() { unsetenv("FAULTLINE_CONFIGS"); }
  std::string file(const std::string& name) const { return dir_.file(name); }
  void write(const std::string& name, const nlohmann::json& doc) const {
    fltest::write_json(dir_.path() / name, doc);
  }

  // Batch = 10 us + 1 us per fault + 2 us per VA block (+1 us page tables) + copies.
  // `extra` adds or replaces values (the optional costs, for instance).
  static nlohmann::json gpu_profile(const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json g = {{"name", "sim test GPU"},       {"sources", {"round numbers for tests"}},
                        {"memory_bytes", 1ull << 34},   {"host_link", "simlink"},
                        {"peer_link", "simlink"},       {"batch_fixed_ns", 10000},
                        {"per_vablock_ns", 2000},       {"per_fault_ns", 1000},
                        {"page_table_update_ns", 1000}, {"eviction_ns", 5000},
                        {"host_fault_ns", 3000},        {"fault_parallelism", 64}};
    g.update(extra);
    return g;
  }
  // 1 GB/s flat with 1 us per transfer: a 64 KB copy takes 1000 + 65536 ns.
  static nlohmann::json link_profile() {
    const nlohmann::json curve = {{"overhead_ns", 1000}, {"bandwidth_gbps", {{4096, 1.0}}}};
    return {{"name", "sim test link"}, {"kind", "pcie"}, {"forward", curve}, {"reverse", curve}};
  }
  static nlohmann::json run_config(const nlohmann::json& driver = nlohmann::json::object(),
                                   const std::string& policy = "ondemand") {
    return {{"gpu", "simgpu"},
            {"capacity", {{"fraction_of_footprint", 1.0}}},
            {"driver", driver},
            {"policy", {{"name", policy}}},
            {"per_kernel", true}};
  }

private:
  fltest::TempDir dir_;
};

inline faultline::config::RunConfig parse(const nlohmann::json& doc) {
  return faultline::config::parse_run_config(doc, "test config");
}

} // namespace simtest
