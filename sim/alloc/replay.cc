#include "sim/alloc/replay.h"

#include "sim/config/schema.h"
#include "sim/core/error.h"
#include "sim/run/results.h"

#include <algorithm>
#include <map>

namespace faultline::alloc {
namespace {

using nlohmann::json;

bool whole_chunks(const Bytes& b) {
  return b != 0 && b % kBlockSize == 0;
}

const config::Fields<Options>& option_fields() {
  static const config::Fields<Options> fields = {
      config::custom<Options>(
          {"max_split_size_mb", "unsigned integer", "MiB", "0", "",
           "0 (no limit) or more than 20, as PyTorch requires",
           "PYTORCH_CUDA_ALLOC_CONF max_split_size_mb: larger cached blocks are not split"},
          [](config::Reader& r, Options& o) {
            const uint64_t mb = r.get<uint64_t>("max_split_size_mb", 0);
            if (mb != 0 && mb <= 20)
              r.fail("max_split_size_mb",
                     "expected 0 (no limit) or more than 20, as PyTorch requires");
            if (mb != 0) o.max_split_size = mb * kMiB;
          }),
      config::field(&Options::small_page, "expandable_small_page",
                    "expandable segments: physical page of the small pool")
          .unit("bytes")
          .rule(whole_chunks, "a positive multiple of 2 MiB"),
      config::field(&Options::large_page, "expandable_large_page",
                    "expandable segments: physical page of the large pool")
          .unit("bytes")
          .rule(whole_chunks, "a positive multiple of 2 MiB"),
      config::field(&Options::segment_va, "expandable_segment_va",
                    "expandable segments: virtual addresses reserved per segment")
          .unit("bytes"),
      config::field(&Options::frag_limit, "gmlake_frag_limit",
                    "GMLake fragLimit: smallest request that stitches")
          .unit("bytes"),
      config::field(&Options::reuse_limit, "gmlake_reuse_limit",
                    "GMLake reuseLimit: stitched block / request size at most")
          .at_least(1),
      config::field(&Options::defrag_level, "gmlake_defrag_level",
                    "GMLake defragLevel: 0 stitch first, 1 only after a failure")
          .range(0, 2),
      config::field(&Options::auto_gc, "gmlake_auto_gc",
                    "GMLake autoGC: cached stitched bytes that trigger garbage collection")
          .unit("bytes"),
      config::field(&Options::realloc_missing, "gmlake_realloc_missing",
                    "GMLake reAlloc: create only the missing chunks, then stitch"),
  };
  return fields;
}

void read_allocators(config::Reader& r, ReplayConfig& c) {
  const json list = r.raw("allocators", json(c.allocators));
  if (!list.is_array() || list.empty()) r.fail("allocators", "expected a non-empty array of names");
  std::vector<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "allocators[" + std::to_string(i) + "]";
    if (!list[i].is_string()) r.fail(where, "expected an allocator name (a string)");
    names.push_back(list[i].get<std::string>());
    try {
      require_allocator(names.back());
    } catch (const ConfigError& e) {
      r.fail(where, e.what());
    }
  }
  c.allocators = std::move(names);
}

const config::Fields<ReplayConfig>& replay_fields() {
  static const config::Fields<ReplayConfig> fields = {
      config::custom<ReplayConfig>({"allocators", "array of strings", "",
                                    json(ReplayConfig{}.allocators).dump(), "",
                                    "caching, expandable, gmlake", "the models to run"},
                                   read_allocators),
      config::field(&ReplayConfig::capacity, "capacity_bytes",
                    "physical bytes the driver grants; 0: unlimited")
          .unit("bytes"),
      config::custom<ReplayConfig>(
          {"device", "integer", "", std::to_string(ReplayConfig{}.device), "", "",
           "the GPU the live allocator library runs on; -1: the current"},
          [](config::Reader& r, ReplayConfig& c) {
            c.device = static_cast<int>(r.get<int64_t>("device", c.device));
          }),
      config::object(&ReplayConfig::options, "options", &option_fields, "alloc.options",
                     "the models' knobs", true),
  };
  return fields;
}

FAULTLINE_REGISTER_SCHEMA("alloc", "an allocator config, configs/alloc/NAME.json", replay_fields);
FAULTLINE_REGISTER_SCHEMA("alloc.options", "an allocator config's `options`", option_fields);

// Keeps at most kTimelinePoints points: the usage after each event, reduced to the highest of
// each stretch of events so that peaks survive the thinning.
class TimelineBuilder {
public:
  explicit TimelineBuilder(size_t events)
      : stride_(std::max<size_t>(1, events / kTimelinePoints + 1)) {}
  void add(Time time, Bytes allocated, Bytes reserved) {
    if (count_++ % stride_ == 0) points_.push_back({time, 0, 0});
    auto& p = points_.back();
    p.allocated = std::max(p.allocated, allocated);
    p.reserved = std::max(p.reserved, reserved);
  }
  std::vector<TimelinePoint> take() { return std::move(points_); }

private:
  size_t stride_;
  size_t count_ = 0;
  std::vector<TimelinePoint> points_;
};

struct LiveBlock {
  Block block;
  Bytes requested = 0;
};

// The replay-level invariants, for every model alike: live blocks do not overlap in virtual or
// in physical memory, and the driver holds at least what is allocated.
void check_blocks(const std::map<Addr, LiveBlock>& live, const SimDriver& driver,
                  const Usage& usage, uint64_t event) {
  const std::string where = "after event " + std::to_string(event) + ": ";
  Addr end = 0;
  std::map<Addr, Bytes> physical;
  for (const auto& [address, b] : live) {
    if (address < end) throw SimulationError(where + "two live blocks overlap in virtual memory");
    end = address + b.block.size;
    for (const Fragment& f : driver.translate(address, b.block.size))
      physical[f.physical] = f.bytes;
  }
  Addr physical_end = 0;
  for (const auto& [address, bytes] : physical) {
    if (address < physical_end)
      throw SimulationError(where + "two live blocks share physical memory");
    physical_end = address + bytes;
  }
  if (driver.physical_bytes() < usage.allocated)
    throw SimulationError(where + "reserved bytes are fewer than allocated bytes");
}

} // namespace

ReplayConfig read_replay_config(const json& doc, const std::string& file, json& resolved) {
  config::Reader r(doc, file);
  ReplayConfig c;
  config::read_fields(r, c, replay_fields());
  r.finish();
  resolved = r.resolved();
  return c;
}

ModelResult replay(const History& history, const std::string& allocator,
                   const ReplayConfig& config) {
  SimDriver driver(config.capacity);
  auto model = make_allocator(allocator, config.options, driver);
  ModelResult out;
  out.allocator = allocator;
  TimelineBuilder timeline(history.events.size());
  std::map<Addr, LiveBlock> live; // by the model's address
  std::map<Addr, Addr> renamed;   // recorded address -> model's address
  for (uint64_t i = 0; i < history.events.size(); ++i) {
    const Event& e = history.events[i];
    if (e.alloc) {
      const Block b = model->malloc(e.size, e.stream);
      if (b.address == 0) {
        out.completed = false;
        out.oom_at_event = i;
        ++out.usage.ooms;
        break;
      }
      live[b.address] = {b, e.size};
      renamed[e.address] = b.address;
      out.usage.on_malloc(b.size, e.size, driver.physical_bytes());
    } else {
      const Addr address = renamed.at(e.address);
      renamed.erase(e.address);
      model->free(address);
      const LiveBlock b = live.at(address);
      live.erase(address);
      out.usage.on_free(b.block.size, b.requested, driver.physical_bytes());
    }
    timeline.add(e.time, out.usage.allocated, out.usage.reserved);
    if (config.check_invariants) {
      model->check();
      check_blocks(live, driver, out.usage, i);
    }
  }
  out.timeline = timeline.take();
  for (const auto& [address, b] : live) model->free(address);
  model->empty_cache();
  if (config.check_invariants) model->check();
  out.reserved_after_empty_cache = driver.physical_bytes();
  out.calls = driver.calls();
  out.counters = model->counters();
  return out;
}

json to_json(const ModelResult& r) {
  const Usage& u = r.usage;
  json calls = {{"cudaMalloc", r.calls.malloc},
                {"cudaFree", r.calls.free},
                {"cuMemCreate", r.calls.create},
                {"cuMemRelease", r.calls.release},
                {"cuMemAddressReserve", r.calls.reserve},
                {"cuMemAddressFree", r.calls.unreserve},
                {"cuMemMap", r.calls.map},
                {"cuMemUnmap", r.calls.unmap},
                {"total", r.calls.total()}};
  json counters = json::object();
  for (const auto& [name, value] : r.counters) counters[name] = value;
  json timeline = {
      {"time_ns", json::array()}, {"allocated", json::array()}, {"reserved", json::array()}};
  for (const auto& p : r.timeline) {
    timeline["time_ns"].push_back(p.time);
    timeline["allocated"].push_back(p.allocated);
    timeline["reserved"].push_back(p.reserved);
  }
  const double requested_frag =
      u.peak_reserved == 0 ? 0.0 : 1.0 - static_cast<double>(u.peak_requested) / u.peak_reserved;
  return {{"allocator", r.allocator},
          {"completed", r.completed},
          {"oom_at_event", r.completed ? json() : json(r.oom_at_event)},
          {"peak_allocated", u.peak_allocated},
          {"peak_requested", u.peak_requested},
          {"peak_reserved", u.peak_reserved},
          {"fragmentation", u.fragmentation()},
          {"fragmentation_of_requested", requested_frag},
          {"mallocs", u.mallocs},
          {"frees", u.frees},
          {"driver_calls", calls},
          {"counters", counters},
          {"reserved_after_empty_cache", r.reserved_after_empty_cache},
          {"timeline", timeline}};
}

json run_alloc(const std::string& history_path, const std::string& config_path,
               const std::vector<std::string>& allocators, bool check_invariants) {
  json resolved;
  ReplayConfig config =
      read_replay_config(config::load_json_file(config_path), config_path, resolved);
  if (!allocators.empty()) {
    for (const auto& name : allocators) require_allocator(name);
    config.allocators = allocators;
    resolved["allocators"] = allocators;
  }
  config.check_invariants = check_invariants;
  const History history = read_history(history_path, {config.device});
  json recorded = nullptr;
  if (history.recorded.has_segments)
    recorded = {{"peak_reserved", history.recorded.peak_reserved},
                {"peak_allocated", history.recorded.peak_allocated},
                {"segment_allocs", history.recorded.segment_allocs},
                {"segment_frees", history.recorded.segment_frees}};
  json doc;
  doc["faultline"] = {{"git_revision", git_revision()}};
  doc["config"] = resolved;
  doc["history"] = {{"path", history_path},
                    {"source", history.source},
                    {"events", history.events.size()},
                    {"blocks_before_history", history.blocks_before_history},
                    {"recorded", recorded},
                    {"metadata", history.metadata}};
  doc["results"] = json::array();
  for (const auto& name : config.allocators)
    doc["results"].push_back(to_json(replay(history, name, config)));
  return doc;
}

} // namespace faultline::alloc
