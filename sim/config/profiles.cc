// GPU and link profiles: finding their files, and their keys (declared once, sim/config/schema.h).
#include "sim/config/profile_file.h"
#include "sim/config/run_config.h"
#include "sim/config/schema.h"
#include "source_dir.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace faultline::config {
namespace fs = std::filesystem;
namespace {

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

// Every profile's list of where its numbers came from; kept in the resolved config as given.
template <class S> Binding<S> sources() {
  return custom<S>({"sources", "array of strings", "", "[]", "", "",
                    "where each number came from: measured, published, inferred or fitted"},
                   [](Reader& r, S&) { r.raw("sources", json::array()); });
}

void read_points(Reader& r, LinkCurve& curve) {
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
}

const Fields<LinkCurve>& curve_fields() {
  static const Fields<LinkCurve> fields = {
      field(&LinkCurve::overhead_ns, "overhead_ns", "fixed cost of every copy")
          .unit("ns")
          .required()
          .at_least(0),
      custom<LinkCurve>({"bandwidth_gbps", "array of [bytes, GB/s] pairs", "", "", "required",
                         "non-empty; sizes unsigned, strictly ascending; GB/s positive",
                         "copy bandwidth by transfer size: interpolated linearly in log2(size) "
                         "between points, flat beyond them. A copy of b bytes takes "
                         "overhead_ns + b / bandwidth(b)"},
                        read_points),
  };
  return fields;
}

const Fields<LinkProfile>& link_fields() {
  static const Fields<LinkProfile> fields = {
      field(&LinkProfile::name, "name", "the profile's name").required(),
      sources<LinkProfile>(),
      one_of(&LinkProfile::kind, "kind", {"pcie", "nvlink"}, "the link's kind", true),
      object(&LinkProfile::forward, "forward", &curve_fields, "link.curve",
             "host->GPU for PCIe; lower->higher GPU index for NVLink"),
      object(&LinkProfile::reverse, "reverse", &curve_fields, "link.curve", "the other direction"),
  };
  return fields;
}

// A fault-path cost in ns: never negative.
Scalar<GpuProfile, Time> cost(Time GpuProfile::*member, std::string name, std::string about) {
  return field(member, std::move(name), std::move(about)).unit("ns").at_least(0);
}

const Fields<GpuProfile>& gpu_fields() {
  using G = GpuProfile;
  static const Fields<GpuProfile> fields = {
      field(&G::name, "name", "the profile's name").required(),
      sources<GpuProfile>(),
      field(&G::memory_bytes, "memory_bytes", "the GPU's memory")
          .unit("bytes")
          .required()
          .at_least(kBlockSize)
          .bound_note("2 MB"),
      field(&G::host_link, "host_link", "link profile between host and GPU (links/NAME.json)")
          .required(),
      field(&G::peer_link, "peer_link", "link profile between GPUs (links/NAME.json)").required(),
      cost(&G::batch_fixed_ns, "batch_fixed_ns", "per fault batch: fetch, sort, fault replay")
          .required(),
      cost(&G::per_vablock_ns, "per_vablock_ns",
           "per 2 MB VA block serviced: lock, residency decision, DMA map")
          .required(),
      cost(&G::per_fault_ns, "per_fault_ns", "per fault-buffer entry, duplicates included")
          .required(),
      cost(&G::page_table_update_ns, "page_table_update_ns",
           "per 2 MB VA block serviced: PTE writes and TLB invalidate")
          .required(),
      cost(&G::eviction_ns, "eviction_ns", "per evicted 2 MB chunk, copy extra").required(),
      cost(&G::eviction_run_ns, "eviction_run_ns",
           "per run of pages beyond the first in an evicted chunk (its pages go back in one "
           "copy)"),
      cost(&G::eviction_page_ns, "eviction_page_ns",
           "per 64 KB an eviction copies, beyond the link's time (0: eviction_ns holds it)"),
      cost(&G::eviction_populate_ns, "eviction_populate_ns",
           "per eviction call over a chunk with pages nobody holds, which it populates on the "
           "host"),
      cost(&G::eviction_discarded_ns, "eviction_discarded_ns",
           "the same where those pages are all pages a policy discarded: replaces "
           "eviction_populate_ns")
          .default_from(&G::eviction_populate_ns, "eviction_populate_ns"),
      cost(&G::host_fault_ns, "host_fault_ns",
           "per 64 KB of GPU-resident data the CPU touches, copy extra")
          .required(),
      field(&G::fault_parallelism, "fault_parallelism",
            "outstanding faults before a running kernel stalls")
          .required()
          .at_least(1),
      cost(&G::populate_ns, "populate_ns", "first touch on the GPU: zero-fill and map, per 64 KB"),
      cost(&G::host_populate_ns, "host_populate_ns",
           "the host's touch of managed memory no processor holds (never touched, or "
           "discarded): the CPU's fault that populates it, per 64 KB (charged per 4 KB page)"),
      cost(&G::fault_migrate_ns, "fault_migrate_ns",
           "per 64 KB a fault brings from the host, besides the copy"),
      cost(&G::prefetch_call_ns, "prefetch_call_ns",
           "capacity mode \"budget\": every cudaMemPrefetchAsync call (one per 2 MB block), "
           "resident or not"),
      cost(&G::prefetch_populate_ns, "prefetch_populate_ns",
           "capacity mode \"budget\": per 64 KB a prefetch populates"),
      cost(&G::prefetch_copy_extra_ns, "prefetch_copy_extra_ns",
           "capacity mode \"budget\": a prefetch call that copies, beyond the link's time"),
      cost(&G::swap_extra_ns, "swap_extra_ns",
           "capacity mode \"budget\": a prefetch that copies right after an eviction (the two "
           "in turn on the replay's stream), beyond the two apart"),
      cost(&G::discarded_resident_fault_ns, "discarded_resident_fault_ns",
           "a write fault on a 64 KB page discarded while it held data, in a block with other "
           "pages on the GPU: replaces populate_ns (a read fault costs populate_ns)")
          .default_from(&G::populate_ns, "populate_ns"),
      cost(&G::discarded_fault_ns, "discarded_fault_ns",
           "the same in a block with no page on the GPU")
          .default_from(&G::populate_ns, "populate_ns"),
      cost(&G::discarded_prefetch_ns, "discarded_prefetch_ns",
           "capacity mode \"budget\": per 64 KB a prefetch brings back that a policy discarded "
           "while it held data: replaces prefetch_populate_ns")
          .default_from(&G::prefetch_populate_ns, "prefetch_populate_ns"),
      cost(&G::launch_ns, "launch_ns",
           "capacity mode \"budget\": launching a kernel and waiting for it, as the live replay "
           "does"),
      cost(&G::peer_eviction_ns, "peer_eviction_ns",
           "per 2 MB chunk evicted to a neighbour GPU, beyond its copy")
          .default_from(&G::eviction_ns, "eviction_ns"),
      cost(&G::peer_fault_migrate_ns, "peer_fault_migrate_ns",
           "per 64 KB a fault brings from a neighbour GPU, besides the copy")
          .default_from(&G::fault_migrate_ns, "fault_migrate_ns"),
  };
  return fields;
}

FAULTLINE_REGISTER_SCHEMA("gpu", "a GPU profile, configs/gpus/NAME.json", gpu_fields);
FAULTLINE_REGISTER_SCHEMA("link", "a link profile, configs/links/NAME.json", link_fields);
FAULTLINE_REGISTER_SCHEMA("link.curve", "a link profile's `forward` and `reverse`", curve_fields);

} // namespace

ProfileDoc resolve_profile(const std::string& kind, const json& spec, const std::string& file,
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
    std::error_code error; // a name past the file system's limits is no profile either
    if (!fs::exists(location, error)) {
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
  ProfileDoc p = resolve_profile("links", spec, file, path);
  Reader r(p.doc, p.label, path);
  LinkProfile link;
  read_fields(r, link, link_fields());
  r.finish();
  resolved = r.resolved();
  return link;
}

GpuProfile load_gpu_profile(const json& spec, const std::string& file, const std::string& path,
                            json& resolved) {
  ProfileDoc p = resolve_profile("gpus", spec, file, path);
  Reader r(p.doc, p.label, path);
  GpuProfile g;
  read_fields(r, g, gpu_fields());
  r.finish();
  resolved = r.resolved();
  return g;
}

} // namespace faultline::config
