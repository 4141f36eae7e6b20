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
  Time batch_fixed_ns = 0;       // fetch, sort, fault replay: paid once per batch
  Time per_vablock_ns = 0;       // lock, residency decision, DMA map per VA block
  Time per_fault_ns = 0;         // per fault entry fetched (duplicates included)
  Time page_table_update_ns = 0; // PTE writes and TLB invalidate, per VA block serviced
  Time eviction_ns = 0;          // fixed driver cost per evicted 2 MB chunk (copy extra)
  // An evicted chunk's pages go back in one copy; each run of pages beyond the first costs this,
  // and each 64 KB it copies eviction_page_ns beyond the link's time (faultline calibrate's
  // eviction_runs benchmark; 0 where a profile predates it: eviction_ns then holds it all).
  Time eviction_run_ns = 0;
  Time eviction_page_ns = 0;
  // A 2 MB call to the host (the replay's budget eviction, a policy's eviction) over a chunk
  // with pages nobody holds populates them on the host: it costs this much more, once.
  Time eviction_populate_ns = 0;
  // The same call where the pages nobody holds are all pages a policy discarded (as
  // `faultline run` evicts a whole chunk a policy discarded part of): far less on the H100s
  // measured (faultline calibrate's discarded_touch eviction cases).
  Time eviction_discarded_ns = 0;
  Time host_fault_ns = 0; // CPU fault on a GPU-resident page, per 64 KB serviced
  // The CPU's touch of managed memory no processor holds (never touched, freed and allocated
  // again, or discarded): a CPU fault that populates it on the host, per 64 KB (1.3-1.7 us a
  // 4 KB page on the H200 and H100 instances measured; charged per 4 KB page touched).
  Time host_populate_ns = 0;
  Time populate_ns = 0;      // first touch on the GPU: zero-fill and map, per 64 KB
  Time fault_migrate_ns = 0; // per 64 KB a fault brings from the host, besides the copy
  // cudaMemPrefetchAsync to the GPU, one call per 2 MB block as the live replay issues them
  // (charged in capacity mode "budget"): the call itself, even when all is resident; each 64 KB
  // it populates; and the extra of a call that copies, beyond the link's time.
  Time prefetch_call_ns = 0;
  Time prefetch_populate_ns = 0;
  Time prefetch_copy_extra_ns = 0;
  // A prefetch that copies right after an eviction on the same stream, the two in turn as pump
  // and the oracle make room at a budget, beyond what the two cost apart (charged in capacity
  // mode "budget"; faultline calibrate's swap benchmark).
  Time swap_extra_ns = 0;
  // A fault on a 64 KB page a policy discarded while it held data, instead of populate_ns: in a
  // block the GPU holds other pages of, and in one it does not.
  Time discarded_resident_fault_ns = 0;
  Time discarded_fault_ns = 0;
  // A prefetch of a 64 KB page a policy discarded while it held data, instead of
  // prefetch_populate_ns (charged in capacity mode "budget").
  Time discarded_prefetch_ns = 0;
  // The live replay runs one kernel at a time (charged in capacity mode "budget"): launching a
  // kernel and waiting for it.
  Time launch_ns = 0;
  // Between GPUs (defaults: the host path's eviction_ns and fault_migrate_ns): per 2 MB chunk
  // evicted to a neighbour beyond its copy, and per 64 KB a fault brings from a neighbour.
  Time peer_eviction_ns = 0;
  Time peer_fault_migrate_ns = 0;
  uint32_t fault_parallelism = 0; // outstanding faults before the running kernel stalls
};

// The machine: GPUs (index = position), PCIe switches and links, by node name ("host", a GPU's
// name, a switch's name). A link's forward curve runs from its first node to its second.
struct TopologySpec {
  struct Gpu {
    std::string name;
    GpuProfile profile;
  };
  struct Link {
    std::string a, b;
    LinkProfile profile;
    unsigned count = 1; // parallel links of the profile's kind: bandwidth times count
  };
  std::string name;
  std::vector<Gpu> gpus;
  std::vector<std::string> switches;
  std::vector<Link> links;
};

// How much GPU memory a job's GPU gives managed data: bytes, a fraction of the job's footprint,
// or enough that `spare_fraction` of it is left over at the job's peak.
struct CapacitySpec {
  Bytes bytes = 0;
  double fraction = 0;
  double spare_fraction = -1;
  uint64_t chunks(uint64_t footprint_chunks) const;
};

// A job besides the run's own trace (which runs on GPU 0): another trace on another GPU with
// its own policy and capacity, sharing the machine's links and spare memory.
struct NeighbourJob {
  std::string name;
  std::string trace;
  unsigned gpu = 1;
  std::string policy;
  nlohmann::json policy_params;
  CapacitySpec capacity;
  bool repeat = false; // run the trace again while the run's own job runs
};

enum class EvictionOrder { kFifo, kLru };
// When a prefetch (a policy's, not the density prefetcher's) runs: as its policy's system runs
// it (policies::IPolicy::prefetches_behind_faults), at once with its copy queued on the link
// behind what is there (the stock driver's cudaMemPrefetchAsync), or from a queue that fault
// servicing always overtakes (DeepUM's driver module, sim/uvm/prefetch_queue.h).
enum class PrefetchTiming { kPolicy, kImmediate, kBehindFaults };

struct DriverConfig {
  uint32_t batch_size = 256;
  bool prefetch = true;
  uint32_t prefetch_threshold = 51; // percent, density prefetcher
  EvictionOrder eviction = EvictionOrder::kFifo;
  PrefetchTiming prefetch_queue = PrefetchTiming::kPolicy;
  bool thrashing_detection = false;
  uint32_t thrashing_threshold = 3; // migrations of a block within the lapse
  // Memory a GPU keeps free for its own job: another job's data is placed on it only while
  // more than this stays free (HUVM's reserve of 50 chunks, huvm-uvm-driver.md A.2).
  Bytes peer_reserve_bytes = 100ull << 20;
  // Evictions copy a chunk whole, its runs of pages costing nothing more (HUVM's large-page
  // eviction; the stock driver charges eviction_run_ns a run beyond the first).
  bool block_eviction = false;
  // Blocks evicted to a neighbour are written back to the host in the background, so the
  // neighbour drops them without a copy (HUVM). Off: the neighbour evicts them with a copy, as
  // the live replay does (it cannot keep two copies).
  bool peer_write_back = true;
  // The driver's own evictions (on a fault, or the budget's) go to an NVLink neighbour with
  // room instead of the host (HUVM's uvm_hierarchical_memory; the stock driver: off).
  bool hierarchical_eviction = false;
  Time thrashing_lapse_ns = 500000;
  Time thrashing_pin_ns = 150000000;
};

struct RunConfig {
  std::string description; // free text
  GpuProfile gpu;          // GPU 0's profile
  LinkProfile host_link;
  LinkProfile peer_link;
  unsigned gpus = 1;
  TopologySpec topology; // as given; no GPUs when none was (see machine_topology)
  CapacitySpec capacity; // of GPU 0, for the run's own trace
  std::vector<NeighbourJob> neighbours;
  // Memory a GPU without a job offers others (GPU index -> bytes); default: all it has.
  std::vector<std::pair<unsigned, Bytes>> idle_gpu_bytes;
  // Who keeps residency within capacity. kDriver: the driver evicts when a fault finds the GPU
  // full (predictions). kBudget: as `faultline replay` enforces its budget, so that both run
  // the same experiment: before each kernel (and each prefetched 2 MB chunk) the oldest chunks
  // it does not need are evicted to the host, and migrations issued before a kernel's launch
  // finish before it starts.
  // kProgram: the budget as `faultline run` keeps it inside the real program (sim/program): the
  // same evictions, but the CPU runs ahead as the program does, a kernel waits for the
  // migration stream only when the budget evicted for it, and the policy hears each launch in
  // the GPU's turn (Job::policy_at_gpu_turn_).
  enum class CapacityMode { kDriver, kBudget, kProgram } capacity_mode = CapacityMode::kDriver;
  DriverConfig driver;
  std::string policy = "ondemand";
  nlohmann::json policy_params = nlohmann::json::object();
  bool per_kernel = false;
  // Training steps to run: the trace's first `iterations` steps, or all of them and then its
  // last step again until that many have run (trace::StepRepeater). 0: the trace's own steps.
  uint64_t iterations = 0;
  Time watchdog_ns = 60'000'000'000; // simulated time without any progress
  // The CPU time the policy's decisions take at each launch, which the program's CPU pays before
  // its next call when the policy runs inside it (`faultline run` measures it).
  Time policy_launch_ns = 0;
  uint32_t progress_every = 0; // kernels between progress lines; 0 = off
  nlohmann::json resolved;     // every value as read, defaults filled in
};

// Directory holding gpus/ and links/ profiles: $FAULTLINE_CONFIGS, else the source tree's.
std::string configs_dir();

// Reads a run config file. Profiles are named ("h200") or given as a path; an object
// {"profile": NAME, key: value...} overrides single profile values.
RunConfig load_run_config(const std::string& path);
RunConfig parse_run_config(const nlohmann::json& doc, const std::string& file);
// The machine a run simulates: the config's topology, or (without one) `gpus` GPUs of the
// config's profile, each on its own host link, every pair joined by the peer link.
TopologySpec machine_topology(const RunConfig& c);

// A topology given by name, path or inline object (at $.topology of `file`); `resolved`
// receives it with its profiles expanded.
TopologySpec read_topology(const nlohmann::json& spec, const std::string& file,
                           nlohmann::json& resolved);

LinkProfile load_link_profile(const nlohmann::json& spec, const std::string& file,
                              const std::string& path, nlohmann::json& resolved);
GpuProfile load_gpu_profile(const nlohmann::json& spec, const std::string& file,
                            const std::string& path, nlohmann::json& resolved);

} // namespace faultline::config
