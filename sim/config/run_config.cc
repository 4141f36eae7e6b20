// A run config's own keys, declared once (sim/config/schema.h); profiles are in profiles.cc,
// the topology in topology_config.cc.
#include "sim/config/run_config.h"

#include "sim/config/policy_names.h"
#include "sim/config/schema.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace faultline::config {
namespace fs = std::filesystem;
namespace {

using Mode = RunConfig::CapacityMode;

constexpr uint64_t kMaxIterations = 1'000'000; // a bound that catches a typo, not a model limit

const Fields<DriverConfig>& driver_fields() {
  using D = DriverConfig;
  static const Fields<DriverConfig> fields = {
      field(&D::batch_size, "batch_size", "faults fetched per batch").at_least(1),
      field(&D::prefetch, "prefetch", "density prefetcher on"),
      field(&D::prefetch_threshold, "prefetch_threshold", "prefetcher density threshold")
          .unit("percent")
          .range(1, 100),
      choice(&D::eviction, "eviction",
             {{"fifo", EvictionOrder::kFifo}, {"lru", EvictionOrder::kLru}},
             "victim order; the stock driver is FIFO by first residency"),
      choice(&D::prefetch_queue, "prefetch_queue",
             {{"policy", PrefetchTiming::kPolicy},
              {"immediate", PrefetchTiming::kImmediate},
              {"behind_faults", PrefetchTiming::kBehindFaults}},
             "when a policy's prefetch runs: as the policy's system runs it (deepum: behind "
             "faults; the others: immediate), at once with its copy queued on the link (the "
             "stock driver), or from a queue that fault servicing always overtakes, one 2 MB "
             "block at a time, evicting when it runs (DeepUM's driver module, ASPLOS '23 §3.1)"),
      field(&D::thrashing_detection, "thrashing_detection",
            "pin blocks that keep returning to the GPU"),
      field(&D::thrashing_threshold, "thrashing_threshold",
            "returns within the lapse that count as thrashing")
          .at_least(2),
      field(&D::thrashing_lapse_ns, "thrashing_lapse_ns", "window of the thrashing count")
          .unit("ns")
          .at_least(1),
      field(&D::thrashing_pin_ns, "thrashing_pin_ns",
            "how long a thrashing block stays pinned to the host")
          .unit("ns")
          .at_least(1),
      field(&D::peer_reserve_bytes, "peer_reserve_bytes",
            "a GPU takes another job's data only while more than this stays free (HUVM's "
            "50-chunk reserve)")
          .unit("bytes"),
      field(&D::block_eviction, "block_eviction",
            "evictions copy a chunk whole, its runs of pages costing nothing more "
            "(eviction_run_ns; HUVM's large-page eviction)"),
      field(&D::peer_write_back, "peer_write_back",
            "blocks evicted to a neighbour are written back to the host in the background, so "
            "the neighbour drops them without a copy (false: as the live replay, one copy)"),
      field(&D::hierarchical_eviction, "hierarchical_eviction",
            "the driver's own evictions go to the NVLink neighbour with room holding the fewest "
            "harvested chunks, else to the host (HUVM's `uvm_hierarchical_memory`)"),
  };
  return fields;
}

// The three ways to give a capacity; exactly one is given (read_capacity_spec checks).
const Fields<CapacitySpec>& capacity_fields() {
  const std::string one = "none: give exactly one of the three";
  static const Fields<CapacitySpec> fields = {
      field(&CapacitySpec::bytes, "bytes", "capacity in bytes, rounded up to whole 2 MB chunks")
          .unit("bytes")
          .optional(one)
          .at_least(kBlockSize)
          .bound_note("one 2 MB chunk"),
      field(&CapacitySpec::fraction, "fraction_of_footprint",
            "capacity as a fraction of the job's footprint (peak of live 2 MB chunks spanned by "
            "managed and device allocations), rounded up to whole chunks, at least one")
          .optional(one)
          .above(0)
          .at_most(1e6),
      field(&CapacitySpec::spare_fraction, "spare_fraction",
            "enough capacity that this fraction of it is left free at the job's peak")
          .optional(one)
          .at_least(0)
          .below(1),
  };
  return fields;
}

const Fields<RunConfig>& capacity_mode_fields() {
  static const Fields<RunConfig> fields = {
      choice(&RunConfig::capacity_mode, "mode",
             {{"driver", Mode::kDriver}, {"budget", Mode::kBudget}, {"program", Mode::kProgram}},
             "who keeps residency within capacity (the run's own capacity only). \"driver\": the "
             "driver evicts when a fault finds the GPU full (predictions). \"budget\": as "
             "`faultline replay` enforces its budget, so that simulator and GPU run the same "
             "experiment: before each kernel the oldest chunks it does not need go to the host, "
             "prefetches are one call per 2 MB block on a migration stream, migrations issued "
             "before a kernel's launch finish before it starts, and a fault-watching policy gets "
             "the pages each kernel finds off the GPU at its launch, at its end; needs "
             "`driver.eviction` \"fifo\"; a kernel needing more chunks than the budget is an "
             "error. \"program\": the same budget as `faultline run` keeps it inside the "
             "program: the CPU does not wait for each kernel, a kernel waits for the migrations "
             "issued before it only when the budget evicted for it, no launch of the replay's "
             "is charged, a prefetch of pages already on the GPU makes no call, the policy "
             "hears each launch when the GPU reaches it (the run's books at a launch hold what "
             "the GPU holds then, and it hears a kernel's end before the next launch, as "
             "`faultline run --kernel-ends launch` tells it), and an eviction call covers the "
             "pages a policy discarded, which it populates on the host (at the profile's "
             "eviction_discarded_ns); needs what \"budget\" needs"),
  };
  return fields;
}

CapacitySpec read_capacity_spec(Reader& r) {
  const int given = r.has("bytes") + r.has("fraction_of_footprint") + r.has("spare_fraction");
  if (given != 1) {
    r.fail("bytes",
           "give exactly one of \"bytes\", \"fraction_of_footprint\" and \"spare_fraction\"");
  }
  CapacitySpec c;
  read_fields(r, c, capacity_fields());
  return c;
}

struct PolicySpec {
  std::string name;
  json params = json::object();
};

const Fields<PolicySpec>& policy_fields() {
  static const Fields<PolicySpec> fields = {
      field(&PolicySpec::name, "name", "a registered policy (see `policy.NAME` sections)")
          .required(),
      raw_object(&PolicySpec::params, "params", "the policy's parameters, read by the policy"),
  };
  return fields;
}

std::pair<std::string, json> read_policy_spec(Reader r) {
  PolicySpec p;
  read_fields(r, p, policy_fields());
  if (!config::policy_names().has(p.name))
    r.fail("name",
           "unknown policy \"" + p.name + "\"; known policies: " + config::policy_names().known());
  r.finish();
  return {p.name, p.params};
}

Binding<RunConfig> capacity() {
  return custom<RunConfig>({"capacity", "object", "", "", "required", "keys of `run.capacity`",
                            "GPU 0's capacity for the run's own trace"},
                           [](Reader& r, RunConfig& c) {
                             Reader cap = r.child("capacity");
                             c.capacity = read_capacity_spec(cap);
                             read_fields(cap, c, capacity_mode_fields());
                             cap.finish();
                           });
}

struct IdleGpu {
  uint32_t gpu = 0;
  Bytes bytes = 0;
};

const Fields<IdleGpu>& idle_gpu_fields() {
  static const Fields<IdleGpu> fields = {
      field(&IdleGpu::gpu, "gpu", "a GPU without a job (1 to the last)").required(),
      field(&IdleGpu::bytes, "bytes", "memory it offers other jobs")
          .unit("bytes")
          .required()
          .at_least(kBlockSize)
          .bound_note("one 2 MB chunk"),
  };
  return fields;
}

void read_idle_gpus(Reader& r, RunConfig& c) {
  const size_t n = r.has("idle_gpus") ? r.array_size("idle_gpus") : 0;
  for (size_t i = 0; i < n; ++i) {
    Reader g = r.element("idle_gpus", i);
    IdleGpu idle;
    read_fields(g, idle, idle_gpu_fields());
    if (idle.gpu == 0 || idle.gpu >= c.gpus)
      g.fail("gpu", "expected a GPU from 1 to " + std::to_string(c.gpus - 1));
    for (const auto& job : c.neighbours)
      if (job.gpu == idle.gpu)
        g.fail("gpu", "GPU " + std::to_string(idle.gpu) + " runs a neighbour job");
    g.finish();
    c.idle_gpu_bytes.push_back({idle.gpu, idle.bytes});
  }
}

const Fields<NeighbourJob>& neighbour_fields() {
  using J = NeighbourJob;
  static const Fields<NeighbourJob> fields = {
      field(&J::name, "name", "the job's name in results").required(),
      field(&J::trace, "trace", "the job's trace file").required(),
      field(&J::gpu, "gpu", "its GPU, one no other job runs on (GPU 0 runs the run's own trace)")
          .required(),
      custom<NeighbourJob>(
          {"policy", "object", "", "", "required", "keys of `run.policy`", "its policy"},
          [](Reader& r, NeighbourJob& j) {
            std::tie(j.policy, j.policy_params) = read_policy_spec(r.child("policy"));
          }),
      custom<NeighbourJob>({"capacity", "object", "", "", "required",
                            "one key of `run.capacity` but `mode`", "its GPU's capacity"},
                           [](Reader& r, NeighbourJob& j) {
                             Reader cap = r.child("capacity");
                             j.capacity = read_capacity_spec(cap);
                             cap.finish();
                           }),
      field(&J::repeat, "repeat", "run the trace again for as long as the run's own job runs"),
  };
  return fields;
}

std::vector<NeighbourJob> read_neighbours(Reader& r, const RunConfig& c) {
  std::vector<NeighbourJob> jobs;
  const size_t n = r.has("neighbour_jobs") ? r.array_size("neighbour_jobs") : 0;
  std::vector<unsigned> used = {0};
  for (size_t i = 0; i < n; ++i) {
    Reader j = r.element("neighbour_jobs", i);
    NeighbourJob job;
    read_fields(j, job, neighbour_fields());
    std::error_code error; // a name past the file system's limits does not exist either
    if (!fs::exists(job.trace, error)) j.fail("trace", "file " + job.trace + " does not exist");
    if (job.gpu >= c.gpus) j.fail("gpu", "the machine has GPUs 0 to " + std::to_string(c.gpus - 1));
    if (std::find(used.begin(), used.end(), job.gpu) != used.end())
      j.fail("gpu", "GPU " + std::to_string(job.gpu) +
                        " already runs a job (GPU 0 runs the run's own trace)");
    used.push_back(job.gpu);
    j.finish();
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// The machine: profiles by name (the patches of the resolved config go to c.resolved, which
// parse_run_config lays over the Reader's record), or a topology instead.
Binding<RunConfig> profile(const std::string& key, const std::string& about,
                           const std::string& default_value, const std::string& default_note) {
  return custom<RunConfig>(
      {key, "profile: a name, a path or {\"profile\": name, overrides...}", "", default_value,
       default_note, "", about},
      [key](Reader& r, RunConfig& c) {
        if (r.has("topology")) return;
        const std::string path = "$." + key;
        json& out = c.resolved[key];
        if (key == "gpu") c.gpu = load_gpu_profile(r.raw(key, "h200"), r.file(), path, out);
        if (key == "host_link")
          c.host_link = load_link_profile(r.raw(key, c.gpu.host_link), r.file(), path, out);
        if (key == "peer_link")
          c.peer_link = load_link_profile(r.raw(key, c.gpu.peer_link), r.file(), path, out);
      });
}

Binding<RunConfig> topology() {
  return custom<RunConfig>(
      {"topology", "preset name, file or object", "", "", "none", "",
       "the machine instead of `gpu`/`host_link`/`peer_link`/`gpus` (which may then not be "
       "given); see \"Topologies\""},
      [](Reader& r, RunConfig& c) {
        if (!r.has("topology")) return;
        for (const char* key : {"gpu", "host_link", "peer_link", "gpus"})
          if (r.has(key)) r.fail(key, "give the GPUs and links in the topology, not beside it");
        c.topology = read_topology(r.raw("topology", nullptr), r.file(), c.resolved["topology"]);
        c.gpu = c.topology.gpus[0].profile;
        c.gpus = static_cast<unsigned>(c.topology.gpus.size());
      });
}

const Fields<RunConfig>& run_fields() {
  using C = RunConfig;
  static const Fields<RunConfig> fields = {
      field(&C::description, "description", "free text"),
      profile("gpu", "GPU profile (section `gpu`)", "\"h200\"", ""),
      profile("host_link", "link profile between host and GPU (section `link`)", "",
              "the GPU's `host_link`"),
      profile("peer_link", "link profile between GPUs", "", "the GPU's `peer_link`"),
      unless_given<RunConfig>(
          "topology", field(&C::gpus, "gpus",
                            "number of GPUs of the `gpu` profile, each on its own `host_link`, "
                            "every pair joined by `peer_link`")
                          .range(1, kMaxGpus)),
      topology(),
      capacity(),
      custom<RunConfig>({"neighbour_jobs", "array of objects", "", "[]", "",
                         "keys of `run.neighbour_jobs[]`",
                         "jobs besides the run's own trace (which runs on GPU 0), one per GPU"},
                        [](Reader& r, RunConfig& c) { c.neighbours = read_neighbours(r, c); }),
      custom<RunConfig>({"idle_gpus", "array of objects", "", "[]", "", "keys of `run.idle_gpus[]`",
                         "memory a GPU without a job offers others; default all of its memory"},
                        read_idle_gpus),
      object(&C::driver, "driver", &driver_fields, "run.driver",
             "the UVM driver's settings; may be left out (all defaults)", true),
      custom<RunConfig>({"policy", "object", "", "", "required", "keys of `run.policy`",
                         "the policy and its parameters"},
                        [](Reader& r, RunConfig& c) {
                          std::tie(c.policy, c.policy_params) = read_policy_spec(r.child("policy"));
                        }),
      field(&C::per_kernel, "per_kernel", "per-kernel results"),
      field(&C::iterations, "iterations",
            "training steps to run: the trace's first N steps (its header's `steps`, "
            "`traces/FORMAT.md`; a trace without them is one step), or all of them and then its "
            "last step again until N have run (`sim/trace/step_repeater.h`). `faultline sim "
            "--iterations N` overrides it. Recorded in the resolved config only when given; "
            "results always carry `iterations` and a row per step (`steps`)")
          .optional("the trace's own number of steps")
          .range(1, kMaxIterations),
      field(&C::progress_every, "progress_every",
            "kernels between progress lines on stderr; 0 = off"),
      field(&C::watchdog_ns, "watchdog_ns",
            "simulated time without progress before the run is aborted")
          .unit("ns")
          .at_least(1),
      field(&C::policy_launch_ns, "policy_launch_ns",
            "the CPU time the policy's decisions take at each launch, paid by the program's CPU "
            "before its next call, as when the policy runs inside the program (traces with the "
            "program's timeline); `faultline run` measures it as results.policy_decision_ns over "
            "results.kernels")
          .unit("ns")
          .optional("none: the decisions cost the CPU nothing")
          .at_least(0),
  };
  return fields;
}

Section run_capacity_section() {
  std::vector<Field> fields = docs(capacity_fields());
  for (const Field& f : docs(capacity_mode_fields())) fields.push_back(f);
  return {"run.capacity", "a run config's `capacity`; a neighbour job's without `mode`", fields};
}

FAULTLINE_REGISTER_SCHEMA("run", "a run config, configs/runs/NAME.json", run_fields);
FAULTLINE_REGISTER_SCHEMA("run.driver", "a run config's `driver`", driver_fields);
FAULTLINE_REGISTER_SCHEMA("run.policy", "a run config's `policy`, and a neighbour job's",
                          policy_fields);
FAULTLINE_REGISTER_SCHEMA("run.neighbour_jobs[]", "each of a run config's `neighbour_jobs`",
                          neighbour_fields);
FAULTLINE_REGISTER_SCHEMA("run.idle_gpus[]", "each of a run config's `idle_gpus`", idle_gpu_fields);
[[maybe_unused]] const bool kCapacityRegistered = register_section(run_capacity_section);

} // namespace

uint64_t CapacitySpec::chunks(uint64_t footprint_chunks) const {
  if (bytes) return (bytes + kBlockSize - 1) / kBlockSize;
  const double wanted = fraction > 0 ? fraction * static_cast<double>(footprint_chunks)
                                     : static_cast<double>(footprint_chunks) / (1 - spare_fraction);
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(wanted - 1e-9)));
}

RunConfig parse_run_config(const json& doc, const std::string& file) {
  Reader r(doc, file);
  RunConfig c;
  c.resolved = json::object(); // the profiles' and topology's records, laid over r's below
  read_fields(r, c, run_fields());
  const bool budget = c.capacity_mode == Mode::kBudget || c.capacity_mode == Mode::kProgram;
  if (budget && c.driver.eviction != EvictionOrder::kFifo)
    r.fail("driver", "capacity mode \"budget\" evicts in first-residency order, as the live "
                     "replay does: set \"eviction\": \"fifo\"");
  if (budget && c.driver.prefetch_queue == PrefetchTiming::kBehindFaults)
    r.fail("driver", "capacity mode \"budget\" runs prefetches in order on one stream, as the "
                     "live replay does: set \"prefetch_queue\": \"immediate\"");
  r.finish();
  const json expanded = std::move(c.resolved);
  c.resolved = r.resolved();
  for (const auto& [key, value] : expanded.items()) c.resolved[key] = value;
  return c;
}

RunConfig load_run_config(const std::string& path) {
  return parse_run_config(load_json_file(path), path);
}

} // namespace faultline::config
