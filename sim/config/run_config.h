// The typed, validated configuration of one simulation run, and the profiles it is built from.
#pragma once

#include "sim/core/types.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace faultline::config {

// One direction of a link: time(size) = overhead + size / bandwidth(size), with bandwidth
// interpolated (in log2 of size) between measured points and held flat beyond them.
struct LinkCurve {
  Time overhead_ns = 0;
  std::vector<std::pair<Bytes, double>> points; // (transfer bytes, GB/s), sizes ascending

  Time transfer_ns(Bytes bytes) const;
};

struct LinkProfile {
  std::string name;
  std::string kind;  // "pcie" or "nvlink"
  LinkCurve forward; // host->GPU for PCIe; lower->higher GPU index for NVLink
  LinkCurve reverse;
};

struct GpuProfile {
  std::string name;
  Bytes memory_bytes = 0;
  std::string host_link;
  std::string peer_link;
  // Replayable-fault servicing costs, see huvm-uvm-driver.md Part C and h200-probe.md.
  Time batch_fixed_ns = 0;       // fetch, sort, replay: paid once per batch
  Time per_vablock_ns = 0;       // lock, residency decision, DMA map per VA block
  Time per_fault_ns = 0;         // per fault entry fetched (duplicates included)
  Time page_table_update_ns = 0; // PTE writes and TLB invalidate, per VA block serviced
  Time eviction_ns = 0;          // fixed driver cost per evicted 2 MB chunk (copy extra)
  Time host_fault_ns = 0;        // CPU fault on a GPU-resident page, per 64 KB serviced
  Time populate_ns = 0;          // first touch on the GPU: zero-fill and map, per 64 KB
  Time fault_migrate_ns = 0;     // per 64 KB a fault brings from the host, besides the copy
  // cudaMemPrefetchAsync to the GPU, one call per 2 MB block as the live replay issues them
  // (charged in capacity mode "budget"): the call itself, even when all is resident; each 64 KB
  // it populates; and the extra of a call that copies, beyond the link's time.
  Time prefetch_call_ns = 0;
  Time prefetch_populate_ns = 0;
  Time prefetch_copy_extra_ns = 0;
  uint32_t fault_parallelism = 0; // outstanding faults before the running kernel stalls
};

enum class EvictionOrder { kFifo, kLru };

struct DriverConfig {
  uint32_t batch_size = 256;
  bool prefetch = true;
  uint32_t prefetch_threshold = 51; // percent, density prefetcher
  EvictionOrder eviction = EvictionOrder::kFifo;
  bool thrashing_detection = false;
  uint32_t thrashing_threshold = 3; // migrations of a block within the lapse
  Time thrashing_lapse_ns = 500000;
  Time thrashing_pin_ns = 150000000;
};

struct RunConfig {
  GpuProfile gpu;
  LinkProfile host_link;
  LinkProfile peer_link;
  unsigned gpus = 1;
  // Exactly one of these is set: capacity in bytes or as a fraction of the trace's footprint.
  Bytes capacity_bytes = 0;
  double capacity_fraction = 0;
  // Who keeps residency within capacity. kDriver: the driver evicts when a fault finds the GPU
  // full (predictions). kBudget: as `faultline replay` enforces its budget, so that both run
  // the same experiment: before each kernel (and each prefetched 2 MB chunk) the oldest chunks
  // it does not need are evicted to the host, and migrations issued before a kernel's launch
  // finish before it starts.
  enum class CapacityMode { kDriver, kBudget } capacity_mode = CapacityMode::kDriver;
  DriverConfig driver;
  std::string policy = "ondemand";
  nlohmann::json policy_params = nlohmann::json::object();
  bool per_kernel = false;
  Time watchdog_ns = 60'000'000'000; // simulated time without any progress
  uint32_t progress_every = 0;       // kernels between progress lines; 0 = off
  nlohmann::json resolved;           // every value as read, defaults filled in
};

// Directory holding gpus/ and links/ profiles: $FAULTLINE_CONFIGS, else the source tree's.
std::string configs_dir();

// Reads a run config file. Profiles are named ("h200") or given as a path; an object
// {"profile": NAME, key: value...} overrides single profile values.
RunConfig load_run_config(const std::string& path);
RunConfig parse_run_config(const nlohmann::json& doc, const std::string& file);

LinkProfile load_link_profile(const nlohmann::json& spec, const std::string& file,
                              const std::string& path, nlohmann::json& resolved);
GpuProfile load_gpu_profile(const nlohmann::json& spec, const std::string& file,
                            const std::string& path, nlohmann::json& resolved);

} // namespace faultline::config
