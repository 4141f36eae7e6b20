// The fit half of `faultline calibrate`. Link curves and the eviction and host-fault costs come
// straight from their benchmarks; the fault-path costs come from calibrate_faults.h (every value
// fitted, or for a per-machine calibration an earlier profile's values, kept).
#include "sim/core/error.h"
#include "sim/live/calibrate.h"
#include "sim/live/calibrate_eviction.h"
#include "sim/live/calibrate_faults.h"
#include "sim/live/calibrate_measurements.h"
#include "sim/run/results.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace faultline::live {
namespace {

using nlohmann::json;

double gbps(Bytes bytes, Time ns) {
  return static_cast<double>(bytes) / static_cast<double>(std::max<Time>(1, ns));
}

// One direction: the largest transfer's streaming rate at every size, the prefetch call's own
// cost taken off. The per-copy overhead of the fault path is fitted with the fault costs: single
// small prefetch calls cost far more than the driver's copies while it services a fault.
config::LinkCurve link_curve(const std::vector<std::pair<Bytes, Time>>& points, Time call_ns,
                             const std::string& path) {
  if (points.back().second <= call_ns)
    throw Error("calibration measurements: " + path + ": the largest transfer took " +
                std::to_string(points.back().second) + " ns, no longer than a prefetch call (" +
                std::to_string(call_ns) + " ns); expected a transfer that streams");
  config::LinkCurve curve;
  const double streaming = gbps(points.back().first, points.back().second - call_ns);
  curve.points.emplace_back(points.back().first, std::round(streaming * 1000) / 1000);
  return curve;
}

json curve_json(const config::LinkCurve& c) {
  json points = json::array();
  for (const auto& [bytes, rate] : c.points) points.push_back({bytes, rate});
  return {{"overhead_ns", c.overhead_ns}, {"bandwidth_gbps", points}};
}

config::RunConfig base_config(const CalibrationSettings& settings, json& base_resolved) {
  json doc = {{"gpu", settings.base},
              {"capacity", {{"fraction_of_footprint", 1.0}}},
              {"policy", {{"name", "ondemand"}}},
              {"per_kernel", true}};
  config::RunConfig c = config::parse_run_config(doc, "calibrate --base " + settings.base);
  base_resolved = c.resolved["gpu"];
  return c;
}

// Least-squares slope of ns against x.
double slope(const std::vector<std::pair<Bytes, Time>>& points) {
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) mx += static_cast<double>(x), my += static_cast<double>(y);
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : points) {
    sxy += (static_cast<double>(x) - mx) * (static_cast<double>(y) - my);
    sxx += (static_cast<double>(x) - mx) * (static_cast<double>(x) - mx);
  }
  return sxx > 0 ? sxy / sxx : 0;
}

} // namespace

// What the live replay pays per kernel and per prefetch call between kernels. Measurements made
// before these benchmarks existed keep the call cost of calls in a row. (The replay's
// after_drain_ns is measured, not fitted: the default replay does not drain.)
void replay_costs(const Measurements& m, config::RunConfig& config) {
  config.gpu.launch_ns = m.ns(m.root(), "kernel_overhead_ns", "$");
  if (!m.has("replay")) return;
  const json& r = m.at("replay");
  const Time kernel = m.ns(r, "kernel_ns", "$.replay");
  const auto calls = static_cast<Time>(m.count(r, "prefetches", "$.replay", 1 << 20));
  config.gpu.prefetch_call_ns =
      std::max<Time>(0, (m.ns(r, "with_prefetches_ns", "$.replay") - kernel) / calls);
  if (r.contains("calls_per_kernel")) {
    std::vector<std::pair<Bytes, Time>> points = {{0, kernel}};
    for (const auto& p : m.series(r, "calls_per_kernel", "$.replay", "calls")) points.push_back(p);
    config.gpu.prefetch_call_ns = std::max<Time>(0, std::llround(slope(points)));
  }
}

// The costs read straight off their benchmarks, after the fit: they take the fitted copy
// overhead off.
void direct_costs(const Measurements& m, config::RunConfig& config) {
  const json& ev = m.at("eviction");
  const Time chunks = static_cast<Time>(m.count(ev, "chunks", "$.eviction", 1 << 20));
  const Time chunk_copy = config.host_link.reverse.transfer_ns(kBlockSize);
  const auto benchmark = static_cast<Time>(
      std::llround(static_cast<double>(m.ns(ev, "ns", "$.eviction")) * eviction_level_factor(m)));
  config.gpu.eviction_ns = std::max<Time>(0, benchmark / chunks - chunk_copy);
  config.gpu.eviction_page_ns = 0; // not the base's: eviction_ns is this fit's
  if (m.has("eviction_runs")) split_eviction(m, benchmark / chunks, config);

  const json& pb = m.at("prefetch_blocks");
  const Time blocks = static_cast<Time>(m.count(pb, "blocks", "$.prefetch_blocks", 1 << 20));
  const Time call = m.ns(pb, "resident_ns", "$.prefetch_blocks") / blocks;
  config.gpu.prefetch_call_ns = call;
  config.gpu.prefetch_populate_ns = std::max<Time>(
      0, (m.ns(pb, "populate_ns", "$.prefetch_blocks") / blocks - call) / kBigPagesPerBlock);
  const Time chunk_in = config.host_link.forward.transfer_ns(kBlockSize);
  config.gpu.prefetch_copy_extra_ns =
      std::max<Time>(0, m.ns(pb, "migrate_ns", "$.prefetch_blocks") / blocks - call - chunk_in);

  replay_costs(m, config);

  if (m.has("swap")) { // measurements since the swap benchmark; older ones leave it 0
    const json& sw = m.at("swap");
    const Time pairs = static_cast<Time>(m.count(sw, "pairs", "$.swap", 1 << 20));
    // Since the apart calls are timed beside the pairs, against them; before, against the
    // eviction and prefetch benchmarks, made minutes apart.
    config.gpu.swap_extra_ns =
        sw.contains("apart_ns")
            ? std::max<Time>(0, (m.ns(sw, "ns", "$.swap") - m.ns(sw, "apart_ns", "$.swap")) / pairs)
            : std::max<Time>(0, m.ns(sw, "ns", "$.swap") / pairs -
                                    m.ns(ev, "ns", "$.eviction") / chunks -
                                    m.ns(pb, "migrate_ns", "$.prefetch_blocks") / blocks);
  }

  const json& hf = m.at("host_fault");
  const auto bytes = static_cast<Time>(m.count(hf, "bytes", "$.host_fault", uint64_t{1} << 40));
  const Time copies = (bytes + kBlockSize - 1) / kBlockSize * chunk_copy;
  config.gpu.host_fault_ns = std::max<Time>(0, (m.ns(hf, "ns", "$.host_fault") - copies) /
                                                   std::max<Time>(1, bytes / kBigPageSize));
}

// UVM migrations between GPUs, beyond the peer link's copy: per 2 MB chunk evicted to the next
// GPU, and per 64 KB a fault brings from it (its extra over a fault from the host).
void peer_costs(const Measurements& m, const config::RunConfig& config, FittedProfile& out) {
  const json& ev = m.at("peer_uvm").at("eviction");
  const Time chunks = static_cast<Time>(m.count(ev, "chunks", "$.peer_uvm.eviction", 1 << 20));
  const config::LinkCurve peer =
      link_curve(m.series(m.at("peer"), "forward", "$.peer"), 0, "$.peer.forward");
  out.gpu["peer_eviction_ns"] = std::max<Time>(0, m.ns(ev, "ns", "$.peer_uvm.eviction") / chunks -
                                                      peer.transfer_ns(kBlockSize));
  const json& f = m.at("peer_uvm").at("faults");
  const auto pages =
      static_cast<Time>(m.count(f, "blocks", "$.peer_uvm.faults", 1 << 20) *
                        m.count(f, "pages_per_block", "$.peer_uvm.faults", kBigPagesPerBlock));
  const Time extra =
      (m.ns(f, "peer_ns", "$.peer_uvm.faults") - m.ns(f, "host_ns", "$.peer_uvm.faults")) / pages;
  out.gpu["peer_fault_migrate_ns"] = std::max<Time>(0, config.gpu.fault_migrate_ns + extra);
  out.gpu["sources"].push_back(
      "peer_eviction_ns: one 2 MB cudaMemPrefetchAsync to the next GPU per GPU-resident chunk, "
      "less the peer link's 2 MB copy; peer_fault_migrate_ns: fault_migrate_ns plus, per 64 KB, "
      "what one kernel faulting every page of peer-resident blocks took beyond the same kernel "
      "on host-resident blocks");
}

void keep_from_base(const char* key, const json& base, const std::string& base_name,
                    FittedProfile& out);

// keep_from_base for a cost whose default is another's: the base (resolved) has a value either
// way, so it is kept only where the base's file states it (a `sources` line), else left to its
// default in the fitted profile.
void keep_stated(const char* key, const json& base, const std::string& base_name,
                 FittedProfile& out) {
  const std::string prefix = std::string(key) + ":";
  for (const json& line : base.value("sources", json::array()))
    if (line.is_string() && line.get<std::string>().rfind(prefix, 0) == 0)
      return keep_from_base(key, base, base_name, out);
  out.gpu.erase(key);
}

// Faults on pages a policy discarded while they held data (measurements since the
// discarded_touch benchmark): populate_ns plus what a kernel writing the discarded halves of
// kernel-written blocks took per 64 KB beyond the same kernel on never-touched halves, with the
// other halves on the GPU and evicted.
void discard_costs(const Measurements& m, const config::RunConfig& config, const json& base,
                   const std::string& base_name, FittedProfile& out) {
  if (!m.has("discarded_touch")) { // older measurements: both default to populate_ns
    out.gpu.erase("discarded_resident_fault_ns");
    out.gpu.erase("discarded_fault_ns");
    keep_stated("eviction_discarded_ns", base, base_name, out);
    return;
  }
  const json& d = m.at("discarded_touch");
  const auto pages = static_cast<Time>(m.count(d, "pages", "$.discarded_touch", 1 << 20));
  const Time fresh = m.ns(d, "fresh_ns", "$.discarded_touch");
  const auto per_page = [&](const char* key) {
    return std::max<Time>(0, config.gpu.populate_ns + (m.ns(d, key, "$.discarded_touch") - fresh) /
                                                          std::max<Time>(1, pages));
  };
  out.gpu["discarded_resident_fault_ns"] = per_page("resident_ns");
  out.gpu["discarded_fault_ns"] = per_page("evicted_ns");
  // Where the block was then evicted by a call over the discarded pages too (`faultline run`'s
  // eviction of a whole chunk): the simulator's capacity mode "program" takes that call to put
  // them on the host, so that they fault in as migrations, not at the discarded price. Reported
  // beside that price and a first touch's, to check it; not fitted into the profile.
  if (d.contains("covered_ns")) {
    out.report["discarded_then_evicted"] = {{"write_ns_per_64k", per_page("covered_ns")},
                                            {"discarded_fault_ns", out.gpu["discarded_fault_ns"]},
                                            {"populate_ns", config.gpu.populate_ns}};
    if (d.contains("prefetch_covered_ns"))
      out.report["discarded_then_evicted"]["prefetch_ns_per_64k"] =
          std::max<Time>(0, config.gpu.prefetch_populate_ns +
                                (m.ns(d, "prefetch_covered_ns", "$.discarded_touch") -
                                 m.ns(d, "prefetch_fresh_ns", "$.discarded_touch")) /
                                    std::max<Time>(1, pages));
  }
  out.gpu["sources"].push_back(
      "discarded_resident_fault_ns, discarded_fault_ns: populate_ns plus, per 64 KB, what one "
      "kernel writing the discarded halves of kernel-written blocks took beyond the same kernel "
      "on never-touched halves, the other halves on the GPU and evicted to the host");
  if (d.contains("evict_covered_ns")) {
    const auto blocks = static_cast<Time>(m.count(d, "blocks", "$.discarded_touch", 1 << 20));
    out.gpu["eviction_discarded_ns"] =
        std::max<Time>(0, (m.ns(d, "evict_covered_ns", "$.discarded_touch") -
                           m.ns(d, "evict_evicted_ns", "$.discarded_touch")) /
                              std::max<Time>(1, blocks));
    out.gpu["sources"].push_back(
        "eviction_discarded_ns: one 2 MB call to the host over each kernel-written block whose "
        "first half a policy discarded, against a call over its other half only, per block");
  } else {
    keep_stated("eviction_discarded_ns", base, base_name, out);
  }
  if (!d.contains("prefetch_discarded_ns")) { // measured since the prefetch cases only
    out.gpu.erase("discarded_prefetch_ns");
    return;
  }
  const Time prefetched = m.ns(d, "prefetch_discarded_ns", "$.discarded_touch") -
                          m.ns(d, "prefetch_fresh_ns", "$.discarded_touch");
  out.gpu["discarded_prefetch_ns"] =
      std::max<Time>(0, config.gpu.prefetch_populate_ns + prefetched / std::max<Time>(1, pages));
  out.gpu["sources"].push_back(
      "discarded_prefetch_ns: prefetch_populate_ns plus, per 64 KB, what prefetch calls of the "
      "discarded halves of kernel-written blocks took beyond the same calls on never-touched "
      "halves");
}

// A cost these measurements predate: the base profile's value and its `sources` line kept (so
// that refitting a shipped profile gives it back unchanged), or none where the base has none.
void keep_from_base(const char* key, const json& base, const std::string& base_name,
                    FittedProfile& out) {
  if (!base.contains(key)) {
    out.gpu.erase(key);
    return;
  }
  const std::string prefix = std::string(key) + ":";
  for (const json& line : base.value("sources", json::array())) {
    if (line.is_string() && line.get<std::string>().rfind(prefix, 0) == 0) {
      out.gpu["sources"].push_back(line);
      return;
    }
  }
  out.gpu["sources"].push_back(prefix + " kept from the base profile " + base_name);
}

// The CPU's first touch of managed memory no processor holds, per 64 KB (measurements from
// before the transfer benchmark timed it keep the base's).
void host_populate_cost(const Measurements& m, const json& base, const std::string& base_name,
                        FittedProfile& out) {
  if (!m.has("host_populate")) return keep_from_base("host_populate_ns", base, base_name, out);
  const json& hp = m.at("host_populate");
  const auto bytes = static_cast<Time>(m.count(hp, "bytes", "$.host_populate", uint64_t{1} << 40));
  if (bytes < static_cast<Time>(kBigPageSize))
    throw Error("calibration measurements: $.host_populate.bytes: expected at least 65536 (one "
                "64 KB page), got " +
                std::to_string(bytes));
  // In double: ns times 64 K would overflow for a measurement past 140 s.
  out.gpu["host_populate_ns"] = static_cast<Time>(
      static_cast<double>(m.ns(hp, "ns", "$.host_populate")) * kBigPageSize / bytes);
  out.gpu["sources"].push_back(
      "host_populate_ns: the host writing one byte per 4 KB page of " +
      std::to_string(bytes >> 10) +
      " KB of never-touched managed memory (the live replay's host access), per 64 KB");
}

// The eviction_runs benchmark's costs as split_eviction fitted them, with their sources
// (measurements before the benchmark keep the base's eviction_run_ns and no eviction_page_ns;
// those before its fresh case, the base's eviction_populate_ns).
void eviction_run_cost(const Measurements& m, const config::RunConfig& config, const json& base,
                       const std::string& base_name, FittedProfile& out) {
  out.gpu.erase("eviction_page_ns");
  if (!m.has("eviction_runs") || !m.at("eviction_runs").contains("fresh_ns")) {
    keep_from_base("eviction_populate_ns", base, base_name, out);
  } else {
    out.gpu["eviction_populate_ns"] = config.gpu.eviction_populate_ns;
    out.gpu["sources"].push_back(
        "eviction_populate_ns: the eviction_runs benchmark's chunks of 8 pages written by a "
        "kernel in never-touched memory against the 8 pages of host data, per chunk (the call "
        "populates the chunk's other pages on the host)");
  }
  if (!m.has("eviction_runs")) return keep_from_base("eviction_run_ns", base, base_name, out);
  const std::string runs = m.at("eviction_runs").at("runs").dump();
  out.gpu["eviction_run_ns"] = config.gpu.eviction_run_ns;
  out.gpu["sources"].push_back(
      "eviction_run_ns: chunks of host data read by a kernel at " + runs +
      " spread 64 KB pages, evicted one 2 MB call each, against the same with the pages in one "
      "run, per run beyond the first, timed in alternation");
  if (config.gpu.eviction_page_ns > 0) {
    out.gpu["eviction_page_ns"] = config.gpu.eviction_page_ns;
    out.gpu["sources"].push_back(
        "eviction_page_ns, eviction_ns: the line through the eviction benchmark's full chunks "
        "and the chunks of " +
        runs + " pages in one run, less the link's copy of each");
  }
}

// A per-machine fit starts near the answer (the GPU model's profile), so fewer simulations than
// a full fit's settle it; they bound the calibration's time (under a minute in all).
constexpr unsigned kPerMachineEvaluations = 600;

// The fault path's values (kFaultParams' order): all fitted; for a per-machine calibration
// (measurements with "fault_path_from") fitted from that profile's values where
// "fault_path_fitted", else that profile's, kept. `report` receives the
// benchmarks against them, `source` how the values were found.
std::vector<double> fault_path(const Measurements& m, const config::RunConfig& config, json& report,
                               std::string& source) {
  FaultFit fit(config, m);
  if (!m.has("fault_path_from")) {
    const std::vector<double> x = fit.fit_all();
    report = fit.report(x);
    source = "fault costs, fault_parallelism and the host link's per-copy overhead: Subplex fit "
             "of the simulated one-kernel fault benchmarks to the measured ones (the live "
             "replay's touch kernel: 16 threads per 64 KB page)";
    if (m.has("pooled_from")) {
      std::string names;
      for (const json& p : m.at("pooled_from"))
        names += (names.empty() ? "" : ", ") + p.value("name", std::string("?"));
      source += ", this instance's and those of " + names + " together";
    }
    return x;
  }
  const json& from = m.at("fault_path_from");
  if (!from.is_object() || !from.contains("profile") || !from["profile"].is_string())
    throw Error("calibration measurements: $.fault_path_from.profile: expected the name of the "
                "profile whose fault path is kept");
  std::vector<double> x;
  for (const char* name : kFaultParams)
    x.push_back(static_cast<double>(m.ns(from, name, "$.fault_path_from")));
  const std::string profile = from["profile"].get<std::string>();
  const json fitted = m.has("fault_path_fitted") ? m.at("fault_path_fitted") : json(false);
  if (!fitted.is_boolean())
    throw Error("calibration measurements: $.fault_path_fitted: expected true or false");
  if (fitted.get<bool>()) {
    const json kept = fit.report(x);
    x = fit.fit_from(x, kPerMachineEvaluations);
    report = fit.report(x);
    report["fault_path_from"] = profile;
    report["fault_path_fitted"] = true;
    report["kept"] = {{"median_abs_error", kept["median_abs_error"]},
                      {"max_abs_error", kept["max_abs_error"]}};
    source = "fault costs, fault_parallelism and the host link's per-copy overhead: Subplex fit "
             "of the simulated one-kernel fault benchmarks to this machine's (a per-machine "
             "calibration), from profile " +
             profile + "'s values";
    return x;
  }
  report = fit.report(x);
  report["fault_path_from"] = profile;
  source = "fault costs, fault_parallelism and the host link's per-copy overhead: kept from "
           "profile " +
           profile +
           " (a per-machine calibration); its simulated one-kernel fault benchmarks against this "
           "machine's";
  return x;
}

FittedProfile fit(const json& measurements, const CalibrationSettings& settings) {
  const Measurements m(measurements);
  json base;
  config::RunConfig config = base_config(settings, base);
  const Time call_ns = m.ns(measurements, "prefetch_call_ns", "$");
  config.host_link.name = settings.name + "-host";
  config.host_link.forward =
      link_curve(m.series(measurements, "host_to_gpu", "$"), call_ns, "$.host_to_gpu");
  std::vector<std::pair<Bytes, Time>> to_host = m.series(measurements, "gpu_to_host", "$");
  const double scaled = eviction_level_factor(m);
  for (auto& point : to_host)
    point.second = static_cast<Time>(std::llround(static_cast<double>(point.second) * scaled));
  config.host_link.reverse = link_curve(to_host, call_ns, "$.gpu_to_host");

  FittedProfile out;
  std::string fault_source;
  const std::vector<double> x = fault_path(m, config, out.report, fault_source);
  set_fault_params(config, x);
  direct_costs(m, config);

  const std::string device = measurements.value("device", "unknown GPU");
  const std::string revision =
      measurements.value("/faultline/git_revision"_json_pointer, std::string("unknown"));
  // Measurements from before the switch existed ran with the counters on.
  const json on = measurements.value("cupti_counters", json(true));
  if (!on.is_boolean())
    throw Error("calibration measurements: $.cupti_counters: expected true or false, got " +
                on.dump());
  const std::string counters = on.get<bool>() ? "on" : "off";
  out.gpu = base;
  out.gpu["name"] = settings.name;
  out.gpu["host_link"] = settings.name + "-host";
  out.gpu["eviction_ns"] = config.gpu.eviction_ns;
  out.gpu["host_fault_ns"] = config.gpu.host_fault_ns;
  out.gpu["prefetch_call_ns"] = config.gpu.prefetch_call_ns;
  out.gpu["prefetch_populate_ns"] = config.gpu.prefetch_populate_ns;
  out.gpu["prefetch_copy_extra_ns"] = config.gpu.prefetch_copy_extra_ns;
  out.gpu["launch_ns"] = config.gpu.launch_ns;
  if (m.has("swap"))
    out.gpu["swap_extra_ns"] = config.gpu.swap_extra_ns;
  else
    out.gpu.erase("swap_extra_ns");
  for (size_t i = 0; i < kFaultParamCount; ++i)
    if (std::string(kFaultParams[i]) != "copy_overhead_ns")
      out.gpu[kFaultParams[i]] = static_cast<Time>(x[i]);
  out.gpu["sources"] = json::array(
      {"fitted by faultline calibrate from measurements on " + device + " (revision " + revision +
           ", CUPTI's unified-memory counters " + counters + "); see configs/calibration/" +
           settings.name + ".json",
       fault_source + "; median |error| " + out.report["median_abs_error"].dump() + ", max " +
           out.report["max_abs_error"].dump(),
       std::string("eviction_ns: one 2 MB cudaMemPrefetchAsync to the host per chunk, less the "
                   "link's 2 MB copy") +
           (m.has("warm_up") ? ", measured after the warm-up's evictions (measurements' warm_up)"
                             : "") +
           eviction_spread_text(m) +
           "; host_fault_ns: CPU writes to GPU-resident pages, less their copies, per 64 KB",
       "prefetch_populate_ns, prefetch_copy_extra_ns: 2 MB cudaMemPrefetchAsync calls in a row, "
       "one per block: of unpopulated blocks (less a call on resident ones, per 64 KB), of host "
       "ones (less that call and the link's 2 MB copy)",
       std::string("launch_ns: launch and wait of an empty kernel; ") +
           (m.has("replay")
                ? (m.at("replay").contains("calls_per_kernel")
                       ? "prefetch_call_ns: the slope of an empty kernel's time against 0, 8, 32 "
                         "and 128 2 MB calls on resident blocks before it"
                       : "prefetch_call_ns: 2 MB calls on resident blocks before an empty kernel, "
                         "less the kernel")
                : "prefetch_call_ns: 2 MB calls on resident blocks in a row (these measurements "
                  "predate the replay-rhythm benchmarks)"),
       "memory_bytes and (unless measured) peer_link: kept from the base profile " +
           settings.base});
  if (m.has("swap"))
    out.gpu["sources"].push_back(
        std::string("swap_extra_ns: an eviction and a prefetch of host data in turn, one 2 MB "
                    "call each, per pair, less ") +
        (m.at("swap").contains("apart_ns")
             ? "the same calls apart (the evictions, then the prefetches), timed in alternation"
             : "the eviction benchmark's chunk and the prefetch benchmark's block of host data"));
  if (m.has("combined_from")) {
    std::string names, kept;
    for (const json& c : m.at("combined_from")) {
      const std::string name = c.value("name", json()).is_string()
                                   ? c["name"].get<std::string>()
                                   : c.value("path", std::string("?"));
      names += (names.empty() ? "" : ", ") + name;
      if (c.value("kept", false)) kept = name;
    }
    out.gpu["sources"].push_back(
        m.root().value("combined_by", json("median")) == "fastest"
            ? "every measured time: " + kept +
                  "'s, the moment whose fault benchmarks took least of " + names +
                  ", one instance's at several moments (measurements' combined_from)"
            : "every measured time: the median over the calibrations " + names +
                  ", one instance's at several moments (measurements' combined_from)");
  }
  out.host_link = {
      {"name", settings.name + "-host"},
      {"sources", json::array({"fitted by faultline calibrate on " + device +
                               ": bandwidth = the largest cudaMemPrefetchAsync of host-populated "
                               "memory each way, less the call's own cost (a prefetch of "
                               "resident pages); overhead_ns fitted to the fault benchmarks"})},
      {"kind", "pcie"},
      {"forward", curve_json(config.host_link.forward)},
      {"reverse", curve_json(config.host_link.reverse)}};
  out.peer_link = nullptr;
  if (measurements.contains("peer") && !measurements["peer"].is_null()) {
    const json& peer = measurements["peer"];
    out.peer_link = {
        {"name", settings.name + "-peer"},
        {"sources", json::array({"fitted by faultline calibrate from cudaMemcpyPeer "
                                 "between device buffers on " +
                                 device})},
        {"kind", "nvlink"},
        {"forward",
         curve_json(link_curve(m.series(peer, "forward", "$.peer"), 0, "$.peer.forward"))},
        {"reverse",
         curve_json(link_curve(m.series(peer, "reverse", "$.peer"), 0, "$.peer.reverse"))}};
    out.gpu["peer_link"] = settings.name + "-peer";
    if (measurements.contains("peer_uvm")) peer_costs(m, config, out);
  }
  discard_costs(m, config, base, settings.base, out);
  host_populate_cost(m, base, settings.base, out);
  eviction_run_cost(m, config, base, settings.base, out);
  return out;
}

} // namespace faultline::live
