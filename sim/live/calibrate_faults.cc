#include "sim/live/calibrate_faults.h"

#include "sim/run/results.h"
#include "sim/run/simulator.h"
#include "sim/trace/writer.h"

#include <algorithm>
#include <cmath>
#include <nlopt.hpp>
#include <unistd.h>

namespace faultline::live {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Where the search starts: the published-figure estimates of configs/gpus before calibration,
// never the base profile's values, so a refit reproduces the committed profile.
struct Range {
  double start, lower, upper;
};
constexpr Range kRanges[kFaultParamCount] = {{3000, 0, 1e6}, {300, 0, 1e6},  {6200, 0, 1e6},
                                             {2000, 0, 1e6}, {1000, 0, 1e6}, {1000, 0, 1e6},
                                             {1000, 0, 1e6}, {256, 1, 8192}};
constexpr size_t kParallelism = kFaultParamCount - 1;

fs::path temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "faultline-calibrate-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error("calibrate: cannot create a temporary directory");
  return pattern;
}

// A trace of one benchmark: one managed allocation, written by the host first when the pages
// must start there, and one kernel touching the benchmark's pages at once.
void write_trace(const std::string& path, bool migrate, uint64_t blocks, uint64_t k,
                 FaultOrder order) {
  constexpr Addr kBase = Addr{1} << 32;
  trace::TraceWriter w(path, {{"source", "faultline calibrate"}, {"command", "calibrate"}});
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, blocks * kBlockSize, 0, 0});
  if (migrate) w.write(trace::HostAccessRecord{1, kBase, blocks * kBlockSize, AccessType::kWrite});
  trace::KernelRecord kernel;
  kernel.name = "touch";
  kernel.start = 2;
  for (uint64_t page : fault_touches(blocks, k, order))
    kernel.accesses.push_back({kBase / kBigPageSize + page, 0, AccessType::kRead});
  w.write(kernel);
  w.close();
}

} // namespace

const char* fault_order_name(FaultOrder order) {
  return order == FaultOrder::kStrided ? "strided" : "block";
}

std::vector<uint64_t> fault_touches(uint64_t blocks, uint64_t k, FaultOrder order) {
  std::vector<uint64_t> pages;
  pages.reserve(blocks * k);
  const uint64_t step = kBigPagesPerBlock / k;
  if (order == FaultOrder::kBlock) {
    for (uint64_t b = 0; b < blocks; ++b)
      for (uint64_t j = 0; j < k; ++j) pages.push_back(b * kBigPagesPerBlock + j * step);
  } else {
    for (uint64_t j = 0; j < k; ++j)
      for (uint64_t b = 0; b < blocks; ++b) pages.push_back(b * kBigPagesPerBlock + j * step);
  }
  return pages;
}

void set_fault_params(config::RunConfig& c, const std::vector<double>& x) {
  auto ns = [&](size_t i) { return static_cast<Time>(std::llround(x[i])); };
  config::GpuProfile& g = c.gpu;
  g.batch_fixed_ns = ns(0);
  g.per_fault_ns = ns(1);
  g.per_vablock_ns = ns(2);
  g.page_table_update_ns = ns(3);
  g.populate_ns = ns(4);
  g.fault_migrate_ns = ns(5);
  c.host_link.forward.overhead_ns = c.host_link.reverse.overhead_ns = ns(6);
  g.fault_parallelism = static_cast<uint32_t>(std::max<Time>(1, ns(kParallelism)));
}

json fault_path_of(const std::string& profile) {
  const json doc = {{"gpu", profile},
                    {"capacity", {{"fraction_of_footprint", 1.0}}},
                    {"policy", {{"name", "ondemand"}}}};
  const config::RunConfig c = config::parse_run_config(doc, "calibrate --from " + profile);
  const config::GpuProfile& g = c.gpu;
  // set_fault_params' order, so the names come from kFaultParams.
  const Time values[kFaultParamCount] = {g.batch_fixed_ns,
                                         g.per_fault_ns,
                                         g.per_vablock_ns,
                                         g.page_table_update_ns,
                                         g.populate_ns,
                                         g.fault_migrate_ns,
                                         c.host_link.forward.overhead_ns,
                                         g.fault_parallelism};
  json out = {{"profile", profile}};
  for (size_t i = 0; i < kFaultParamCount; ++i) out[kFaultParams[i]] = values[i];
  return out;
}

FaultFit::FaultFit(config::RunConfig config, const Measurements& m)
    : config_(std::move(config)), dir_(temp_dir()) {
  const json& list = m.at("faults");
  if (!list.is_array() || list.empty())
    throw Error("calibration measurements: $.faults: expected a non-empty array");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = "$.faults[" + std::to_string(i) + "]";
    const json& f = list[i];
    const json kind = f.is_object() ? f.value("kind", json()) : json();
    if (kind != "populate" && kind != "migrate")
      throw Error("calibration measurements: " + path +
                  ".kind: expected \"populate\" or \"migrate\"");
    const uint64_t blocks = m.count(f, "blocks", path, 1 << 16);
    const uint64_t k = m.count(f, "pages_per_block", path, kBigPagesPerBlock);
    if (kBigPagesPerBlock % k != 0)
      throw Error("calibration measurements: " + path +
                  ": blocks must be positive and pages_per_block divide 32");
    const json order = f.value("order", json("block"));
    if (order != "block" && order != "strided")
      throw Error("calibration measurements: " + path +
                  ".order: expected \"block\" or \"strided\" (or no order: block)");
    const FaultOrder o = order == "strided" ? FaultOrder::kStrided : FaultOrder::kBlock;
    benches_.push_back({kind == "migrate", blocks, k, o, m.ns(f, "ns", path),
                        (dir_ / ("bench-" + std::to_string(i) + ".fltrace")).string()});
    write_trace(benches_.back().trace, benches_.back().migrate, blocks, k, o);
  }
}

FaultFit::~FaultFit() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Time FaultFit::simulate(const Bench& b, const std::vector<double>& x) {
  set_fault_params(config_, x);
  Simulator sim(config_, b.trace, config_.gpu.memory_bytes / kBlockSize);
  const KernelRow& row = sim.run().kernel_rows.at(0);
  return row.end - row.start;
}

double FaultFit::error(const std::vector<double>& x) {
  double sum = 0;
  for (const Bench& b : benches_) {
    const double e = std::log(static_cast<double>(std::max<Time>(1, simulate(b, x))) /
                              static_cast<double>(std::max<Time>(1, b.measured)));
    sum += e * e;
  }
  return sum;
}

std::vector<double> FaultFit::fit_all() {
  std::vector<double> x;
  for (const Range& r : kRanges) x.push_back(r.start);
  return fit(x, 1500);
}

std::vector<double> FaultFit::fit_from(std::vector<double> start, unsigned evaluations) {
  if (start.size() != kFaultParamCount)
    throw Error("calibrate: a fault path's start needs " + std::to_string(kFaultParamCount) +
                " values");
  for (size_t i = 0; i < kFaultParamCount; ++i)
    start[i] = std::clamp(start[i], kRanges[i].lower, kRanges[i].upper);
  return fit(start, evaluations);
}

std::vector<double> FaultFit::fit(std::vector<double> x, unsigned evaluations) {
  std::vector<double> lower, upper;
  for (const Range& r : kRanges) lower.push_back(r.lower), upper.push_back(r.upper);
  nlopt::opt opt(nlopt::LN_SBPLX, static_cast<unsigned>(x.size()));
  opt.set_lower_bounds(lower);
  opt.set_upper_bounds(upper);
  error(x); // a model error surfaces here with its message, not as NLopt's bare failure
  opt.set_min_objective([](const std::vector<double>& p, std::vector<double>&,
                           void* self) { return static_cast<FaultFit*>(self)->error(p); },
                        this);
  opt.set_xtol_abs(10.0); // nanoseconds
  opt.set_maxeval(static_cast<int>(evaluations));
  double best = 0;
  try {
    opt.optimize(x, best);
  } catch (const nlopt::roundoff_limited&) {
    // the best point so far stands
  }
  for (double& v : x) v = std::round(v);
  return x;
}

json FaultFit::report(const std::vector<double>& x) {
  json rows = json::array();
  std::vector<double> errors;
  for (const Bench& b : benches_) {
    const Time sim = simulate(b, x);
    const double e =
        static_cast<double>(sim) / static_cast<double>(std::max<Time>(1, b.measured)) - 1;
    errors.push_back(std::abs(e));
    rows.push_back({{"kind", b.migrate ? "migrate" : "populate"},
                    {"blocks", b.blocks},
                    {"pages_per_block", b.pages_per_block},
                    {"order", fault_order_name(b.order)},
                    {"measured_ns", b.measured},
                    {"simulated_ns", sim},
                    {"error", std::round(e * 1000) / 1000}});
  }
  std::sort(errors.begin(), errors.end());
  return {{"faults", rows},
          {"median_abs_error", std::round(errors[errors.size() / 2] * 1000) / 1000},
          {"max_abs_error", std::round(errors.back() * 1000) / 1000}};
}

} // namespace faultline::live
