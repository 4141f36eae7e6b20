#include "sim/config/run_config.h"
#include "source_dir.h"

#include "sim/config/policy_names.h"
#include "sim/config/reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>


namespace faultline::config {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxIterations = 1'000'000; // a bound that catches a typo, not a model limit

struct Profile {
  json doc;
  std::string label; // for messages: which file(s) the values came from
};

std::string known_profiles(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none in " + dir.string() + ")" : out;
}

// Checks that every override names a key the profile has, so a typo is never silently ignored.
void check_overrides(const json& base, const json& overrides, const std::string& file,
                     const std::string& path) {
  for (auto& [key, value] : overrides.items()) {
    if (!base.contains(key)) {
      std::string known;
      for (auto& [k, v] : base.items()) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError(file + ": " + path + "." + key +
                        ": overrides no value of the profile; it has: " + known);
    }
    if (value.is_object() && base[key].is_object()) {
      check_overrides(base[key], value, file, path + "." + key);
    }
  }
}

Profile resolve_profile(const std::string& kind, const json& spec, const std::string& file,
                        const std::string& path) {
  std::string name;
  json overrides = json::object();
  if (spec.is_string()) {
    name = spec.get<std::string>();
  } else if (spec.is_object() && spec.contains("profile") && spec["profile"].is_string()) {
    name = spec["profile"].get<std::string>();
    overrides = spec;
    overrides.erase("profile");
  } else {
    throw ConfigError(file + ": " + path + ": expected a profile name (string) or an object " +
                      "{\"profile\": name, overrides...}, got " + type_name(spec));
  }
  fs::path location;
  const fs::path dir = fs::path(configs_dir()) / kind;
  if (name.find('/') != std::string::npos || fs::path(name).extension() == ".json") {
    location = fs::path(file).parent_path() / name;
  } else {
    location = dir / (name + ".json");
    if (!fs::exists(location)) {
      throw ConfigError(file + ": " + path + ": unknown " + kind + " profile \"" + name +
                        "\"; known: " + known_profiles(dir));
    }
  }
  json doc = load_json_file(location.string());
  check_overrides(doc, overrides, file, path);
  doc.merge_patch(overrides);
  std::string label = location.string();
  if (!overrides.empty()) label += " with overrides from " + file;
  return {doc, label};
}

LinkCurve read_curve(Reader r) {
  LinkCurve curve;
  curve.overhead_ns = r.get<int64_t>("overhead_ns");
  if (curve.overhead_ns < 0) r.fail("overhead_ns", "must be >= 0");
  const json points = r.raw("bandwidth_gbps", nullptr);
  if (!points.is_array() || points.empty()) {
    r.fail("bandwidth_gbps", "expected a non-empty array of [transfer_bytes, GB/s] pairs");
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const json& p = points[i];
    const std::string at = "bandwidth_gbps[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !is_non_negative_integer(p[0]) || !p[1].is_number() ||
        p[1].get<double>() <= 0) {
      r.fail(at, "expected [transfer_bytes (unsigned integer), GB/s (positive number)]");
    }
    const Bytes size = p[0].get<Bytes>();
    if (!curve.points.empty() && size <= curve.points.back().first) {
      r.fail(at, "transfer sizes must be strictly ascending");
    }
    curve.points.emplace_back(size, p[1].get<double>());
  }
  r.finish();
  return curve;
}

EvictionOrder read_eviction(Reader& r) {
  const std::string order = r.get<std::string>("eviction", "fifo");
  if (order == "fifo") return EvictionOrder::kFifo;
  if (order == "lru") return EvictionOrder::kLru;
  r.fail("eviction", "expected \"fifo\" or \"lru\", got \"" + order + "\"");
}

DriverConfig read_driver(Reader r) {
  DriverConfig d;
  d.batch_size = r.get<uint32_t>("batch_size", d.batch_size);
  if (d.batch_size == 0) r.fail("batch_size", "must be at least 1");
  d.prefetch = r.get<bool>("prefetch", d.prefetch);
  d.prefetch_threshold = r.get<uint32_t>("prefetch_threshold", d.prefetch_threshold);
  if (d.prefetch_threshold < 1 || d.prefetch_threshold > 100) {
    r.fail("prefetch_threshold", "expected a percentage from 1 to 100");
  }
  d.eviction = read_eviction(r);
  d.thrashing_detection = r.get<bool>("thrashing_detection", d.thrashing_detection);
  d.thrashing_threshold = r.get<uint32_t>("thrashing_threshold", d.thrashing_threshold);
  if (d.thrashing_threshold < 2) r.fail("thrashing_threshold", "must be at least 2");
  d.thrashing_lapse_ns = r.get<int64_t>("thrashing_lapse_ns", d.thrashing_lapse_ns);
  d.thrashing_pin_ns = r.get<int64_t>("thrashing_pin_ns", d.thrashing_pin_ns);
  d.peer_reserve_bytes = r.get<uint64_t>("peer_reserve_bytes", d.peer_reserve_bytes);
  d.block_eviction = r.get<bool>("block_eviction", d.block_eviction);
  d.peer_write_back = r.get<bool>("peer_write_back", d.peer_write_back);
  d.hierarchical_eviction = r.get<bool>("hierarchical_eviction", d.hierarchical_eviction);
  if (d.thrashing_lapse_ns <= 0) r.fail("thrashing_lapse_ns", "must be positive");
  if (d.thrashing_pin_ns <= 0) r.fail("thrashing_pin_ns", "must be positive");
  r.finish();
  return d;
}

CapacitySpec read_capacity_spec(Reader& r) {
  CapacitySpec c;
  const int given = r.has("bytes") + r.has("fraction_of_footprint") + r.has("spare_fraction");
  if (given != 1) {
    r.fail("bytes",
           "give exactly one of \"bytes\", \"fraction_of_footprint\" and \"spare_fraction\"");
  }
  if (r.has("bytes")) {
    c.bytes = r.get<uint64_t>("bytes");
    if (c.bytes < kBlockSize) r.fail("bytes", "must be at least one 2 MB chunk");
  } else if (r.has("fraction_of_footprint")) {
    c.fraction = r.get<double>("fraction_of_footprint");
    if (!(c.fraction > 0) || c.fraction > 1e6) {
      r.fail("fraction_of_footprint", "must be a positive number");
    }
  } else {
    c.spare_fraction = r.get<double>("spare_fraction");
    if (!(c.spare_fraction >= 0 && c.spare_fraction < 1)) {
      r.fail("spare_fraction", "expected a fraction in [0, 1)");
    }
  }
  return c;
}

void read_capacity(Reader r, RunConfig& c) {
  c.capacity = read_capacity_spec(r);
  const std::string mode = r.get<std::string>("mode", "driver");
  if (mode == "budget")
    c.capacity_mode = RunConfig::CapacityMode::kBudget;
  else if (mode != "driver")
    r.fail("mode", "expected \"driver\" (evict on fault) or \"budget\" (as faultline replay)");
  r.finish();
}

std::pair<std::string, json> read_policy_spec(Reader r) {
  const std::string name = r.get<std::string>("name");
  if (!config::policy_names().has(name))
    r.fail("name",
           "unknown policy \"" + name + "\"; known policies: " + config::policy_names().known());
  json params = r.raw("params", json::object());
  if (!params.is_object()) r.fail("params", "expected object");
  r.finish();
  return {name, params};
}

void read_policy(Reader r, RunConfig& c) {
  std::tie(c.policy, c.policy_params) = read_policy_spec(r);
}

TopologySpec uniform_topology(const RunConfig& c) {
  TopologySpec t;
  t.name = "uniform";
  for (unsigned i = 0; i < c.gpus; ++i) t.gpus.push_back({"GPU" + std::to_string(i), c.gpu});
  for (unsigned i = 0; i < c.gpus; ++i) {
    t.links.push_back({"host", t.gpus[i].name, c.host_link, 1});
    for (unsigned j = i + 1; j < c.gpus; ++j)
      t.links.push_back({t.gpus[i].name, t.gpus[j].name, c.peer_link, 1});
  }
  return t;
}

// A node name not used yet ("host" is taken).
std::string read_new_name(Reader& r, std::vector<std::string>& nodes) {
  const std::string name = r.get<std::string>("name");
  if (name.empty() || std::find(nodes.begin(), nodes.end(), name) != nodes.end())
    r.fail("name", "expected a name not used by another node (\"host\" is the host)");
  nodes.push_back(name);
  return name;
}

std::string read_node(Reader& r, const std::string& key, const std::vector<std::string>& nodes) {
  const std::string name = r.get<std::string>(key);
  if (std::find(nodes.begin(), nodes.end(), name) == nodes.end()) {
    std::string known;
    for (const auto& n : nodes) known += (known.empty() ? "" : ", ") + n;
    r.fail(key, "unknown node \"" + name + "\"; the topology has: " + known);
  }
  return name;
}

TopologySpec read_topology(const json& spec, const std::string& file, json& resolved) {
  // A preset or file by name, or the topology itself written inline.
  const bool inline_doc = spec.is_object() && !spec.contains("profile");
  Profile p =
      inline_doc ? Profile{spec, file} : resolve_profile("topologies", spec, file, "$.topology");
  Reader r(p.doc, p.label, "$.topology");
  TopologySpec t;
  t.name = r.get<std::string>("name");
  r.raw("sources", json::array());
  std::vector<std::string> nodes = {"host"};
  const size_t gpus = r.array_size("gpus");
  if (gpus == 0 || gpus > kMaxGpus)
    r.fail("gpus", "expected 1 to " + std::to_string(kMaxGpus) + " GPUs");
  json gpu_resolved = json::array();
  for (size_t i = 0; i < gpus; ++i) {
    Reader g = r.element("gpus", i);
    json one;
    t.gpus.push_back({read_new_name(g, nodes), load_gpu_profile(g.raw("profile", nullptr), p.label,
                                                                g.path() + ".profile", one)});
    g.finish();
    gpu_resolved.push_back({{"name", t.gpus.back().name}, {"profile", one}});
  }
  const size_t switches = r.has("switches") ? r.array_size("switches") : 0;
  for (size_t i = 0; i < switches; ++i) {
    Reader sw = r.element("switches", i);
    t.switches.push_back(read_new_name(sw, nodes));
    sw.finish();
  }
  const size_t links = r.array_size("links");
  json link_resolved = json::array();
  for (size_t i = 0; i < links; ++i) {
    Reader l = r.element("links", i);
    TopologySpec::Link link;
    link.a = read_node(l, "from", nodes);
    link.b = read_node(l, "to", nodes);
    if (link.a == link.b) l.fail("to", "a link joins two different nodes");
    json one;
    link.profile = load_link_profile(l.raw("link", nullptr), p.label, l.path() + ".link", one);
    link.count = l.get<uint32_t>("count", 1);
    if (link.count == 0 || link.count > 64) l.fail("count", "expected 1 to 64 links");
    for (const auto& other : t.links)
      if ((other.a == link.a && other.b == link.b) || (other.a == link.b && other.b == link.a))
        l.fail("to",
               "a second link between " + link.a + " and " + link.b + "; give one with a count");
    l.finish();
    link_resolved.push_back(
        {{"from", link.a}, {"to", link.b}, {"count", link.count}, {"link", one}});
    t.links.push_back(std::move(link));
  }
  r.finish();
  resolved = r.resolved();
  resolved["gpus"] = gpu_resolved;
  resolved["links"] = link_resolved;
  return t;
}

void read_idle_gpus(Reader& r, RunConfig& c) {
  const size_t n = r.has("idle_gpus") ? r.array_size("idle_gpus") : 0;
  for (size_t i = 0; i < n; ++i) {
    Reader g = r.element("idle_gpus", i);
    const unsigned gpu = g.get<uint32_t>("gpu");
    if (gpu == 0 || gpu >= c.gpus)
      g.fail("gpu", "expected a GPU from 1 to " + std::to_string(c.gpus - 1));
    for (const auto& job : c.neighbours)
      if (job.gpu == gpu) g.fail("gpu", "GPU " + std::to_string(gpu) + " runs a neighbour job");
    const Bytes bytes = g.get<uint64_t>("bytes");
    if (bytes < kBlockSize) g.fail("bytes", "must be at least one 2 MB chunk");
    g.finish();
    c.idle_gpu_bytes.push_back({gpu, bytes});
  }
}

std::vector<NeighbourJob> read_neighbours(Reader& r, const RunConfig& c) {
  std::vector<NeighbourJob> jobs;
  const size_t n = r.has("neighbour_jobs") ? r.array_size("neighbour_jobs") : 0;
  std::vector<unsigned> used = {0};
  for (size_t i = 0; i < n; ++i) {
    Reader j = r.element("neighbour_jobs", i);
    NeighbourJob job;
    job.name = j.get<std::string>("name");
    job.trace = j.get<std::string>("trace");
    if (!fs::exists(job.trace)) j.fail("trace", "file " + job.trace + " does not exist");
    job.gpu = j.get<uint32_t>("gpu");
    if (job.gpu >= c.gpus) j.fail("gpu", "the machine has GPUs 0 to " + std::to_string(c.gpus - 1));
    if (std::find(used.begin(), used.end(), job.gpu) != used.end())
      j.fail("gpu", "GPU " + std::to_string(job.gpu) +
                        " already runs a job (GPU 0 runs the run's own trace)");
    used.push_back(job.gpu);
    std::tie(job.policy, job.policy_params) = read_policy_spec(j.child("policy"));
    Reader cap = j.child("capacity");
    job.capacity = read_capacity_spec(cap);
    cap.finish();
    job.repeat = j.get<bool>("repeat", false);
    j.finish();
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Optional, and recorded in the resolved config only when given: its default is the trace's.
void read_iterations(Reader& r, RunConfig& c) {
  if (!r.has("iterations")) return;
  c.iterations = r.get<uint64_t>("iterations");
  if (c.iterations < 1 || c.iterations > kMaxIterations)
    r.fail("iterations", "expected 1 to " + std::to_string(kMaxIterations) + " steps, got " +
                             std::to_string(c.iterations));
}

} // namespace

uint64_t CapacitySpec::chunks(uint64_t footprint_chunks) const {
  if (bytes) return (bytes + kBlockSize - 1) / kBlockSize;
  const double wanted = fraction > 0 ? fraction * static_cast<double>(footprint_chunks)
                                     : static_cast<double>(footprint_chunks) / (1 - spare_fraction);
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(wanted - 1e-9)));
}

Time LinkCurve::transfer_ns(Bytes bytes) const {
  if (bytes == 0) return 0;
  double gbps = points.front().second;
  if (bytes >= points.back().first) {
    gbps = points.back().second;
  } else if (bytes > points.front().first) {
    auto hi = std::upper_bound(points.begin(), points.end(), bytes,
                               [](Bytes b, const auto& p) { return b < p.first; });
    auto lo = hi - 1;
    const double x = std::log2(static_cast<double>(bytes));
    const double x0 = std::log2(static_cast<double>(lo->first));
    const double x1 = std::log2(static_cast<double>(hi->first));
    gbps = lo->second + (hi->second - lo->second) * (x - x0) / (x1 - x0);
  }
  // GB/s is bytes per ns; round up so that every transfer takes time.
  return overhead_ns + static_cast<Time>(std::ceil(static_cast<double>(bytes) / gbps));
}

std::string configs_dir() {
  if (const char* env = std::getenv("FAULTLINE_CONFIGS")) return env;
  return FAULTLINE_SOURCE_CONFIGS;
}

LinkProfile load_link_profile(const json& spec, const std::string& file, const std::string& path,
                              json& resolved) {
  Profile p = resolve_profile("links", spec, file, path);
  Reader r(p.doc, p.label, path);
  LinkProfile link;
  link.name = r.get<std::string>("name");
  r.raw("sources", json::array());
  link.kind = r.get<std::string>("kind");
  if (link.kind != "pcie" && link.kind != "nvlink")
    r.fail("kind", "expected \"pcie\" or \"nvlink\"");
  link.forward = read_curve(r.child("forward"));
  link.reverse = read_curve(r.child("reverse"));
  r.finish();
  resolved = r.resolved();
  return link;
}

GpuProfile load_gpu_profile(const json& spec, const std::string& file, const std::string& path,
                            json& resolved) {
  Profile p = resolve_profile("gpus", spec, file, path);
  Reader r(p.doc, p.label, path);
  GpuProfile g;
  g.name = r.get<std::string>("name");
  r.raw("sources", json::array());
  g.memory_bytes = r.get<uint64_t>("memory_bytes");
  g.host_link = r.get<std::string>("host_link");
  g.peer_link = r.get<std::string>("peer_link");
  g.batch_fixed_ns = r.get<int64_t>("batch_fixed_ns");
  g.per_vablock_ns = r.get<int64_t>("per_vablock_ns");
  g.per_fault_ns = r.get<int64_t>("per_fault_ns");
  g.page_table_update_ns = r.get<int64_t>("page_table_update_ns");
  g.eviction_ns = r.get<int64_t>("eviction_ns");
  g.host_fault_ns = r.get<int64_t>("host_fault_ns");
  g.fault_parallelism = r.get<uint32_t>("fault_parallelism");
  g.populate_ns = r.get<int64_t>("populate_ns", 0);
  g.fault_migrate_ns = r.get<int64_t>("fault_migrate_ns", 0);
  g.prefetch_call_ns = r.get<int64_t>("prefetch_call_ns", 0);
  g.prefetch_populate_ns = r.get<int64_t>("prefetch_populate_ns", 0);
  g.prefetch_copy_extra_ns = r.get<int64_t>("prefetch_copy_extra_ns", 0);
  g.launch_ns = r.get<int64_t>("launch_ns", 0);
  g.peer_eviction_ns = r.get<int64_t>("peer_eviction_ns", g.eviction_ns);
  g.peer_fault_migrate_ns = r.get<int64_t>("peer_fault_migrate_ns", g.fault_migrate_ns);
  for (const char* key :
       {"batch_fixed_ns", "per_vablock_ns", "per_fault_ns", "page_table_update_ns", "eviction_ns",
        "host_fault_ns", "populate_ns", "fault_migrate_ns", "prefetch_call_ns",
        "prefetch_populate_ns", "prefetch_copy_extra_ns", "launch_ns", "peer_eviction_ns",
        "peer_fault_migrate_ns"}) {
    if (p.doc.value(key, int64_t{0}) < 0) r.fail(key, "must be >= 0");
  }
  if (g.fault_parallelism == 0) r.fail("fault_parallelism", "must be at least 1");
  if (g.memory_bytes < kBlockSize) r.fail("memory_bytes", "must be at least 2 MB");
  r.finish();
  resolved = r.resolved();
  return g;
}

RunConfig parse_run_config(const json& doc, const std::string& file) {
  Reader r(doc, file);
  RunConfig c;
  r.get<std::string>("description", "");
  json gpu_resolved, host_resolved, peer_resolved, topology_resolved;
  if (r.has("topology")) {
    for (const char* key : {"gpu", "host_link", "peer_link", "gpus"})
      if (r.has(key)) r.fail(key, "give the GPUs and links in the topology, not beside it");
    c.topology = read_topology(r.raw("topology", nullptr), file, topology_resolved);
    c.gpu = c.topology.gpus[0].profile;
    c.gpus = static_cast<unsigned>(c.topology.gpus.size());
  } else {
    c.gpu = load_gpu_profile(r.raw("gpu", "h200"), file, "$.gpu", gpu_resolved);
    c.host_link =
        load_link_profile(r.raw("host_link", c.gpu.host_link), file, "$.host_link", host_resolved);
    c.peer_link =
        load_link_profile(r.raw("peer_link", c.gpu.peer_link), file, "$.peer_link", peer_resolved);
    c.gpus = r.get<uint32_t>("gpus", 1);
    if (c.gpus == 0 || c.gpus > kMaxGpus)
      r.fail("gpus", "expected 1 to " + std::to_string(kMaxGpus) + " GPUs");
  }
  read_capacity(r.child("capacity"), c);
  c.neighbours = read_neighbours(r, c);
  read_idle_gpus(r, c);
  c.driver = read_driver(r.optional_child("driver"));
  if (c.capacity_mode == RunConfig::CapacityMode::kBudget &&
      c.driver.eviction != EvictionOrder::kFifo)
    r.fail("driver", "capacity mode \"budget\" evicts in first-residency order, as the live "
                     "replay does: set \"eviction\": \"fifo\"");
  read_policy(r.child("policy"), c);
  c.per_kernel = r.get<bool>("per_kernel", false);
  read_iterations(r, c);
  c.progress_every = r.get<uint32_t>("progress_every", 0);
  c.watchdog_ns = r.get<int64_t>("watchdog_ns", c.watchdog_ns);
  if (c.watchdog_ns <= 0) r.fail("watchdog_ns", "must be positive");
  r.finish();
  c.resolved = r.resolved();
  if (topology_resolved.is_null()) {
    c.resolved["gpu"] = gpu_resolved;
    c.resolved["host_link"] = host_resolved;
    c.resolved["peer_link"] = peer_resolved;
  } else {
    c.resolved["topology"] = topology_resolved;
  }
  return c;
}

TopologySpec machine_topology(const RunConfig& c) {
  return c.topology.gpus.empty() ? uniform_topology(c) : c.topology;
}

RunConfig load_run_config(const std::string& path) {
  return parse_run_config(load_json_file(path), path);
}

} // namespace faultline::config
