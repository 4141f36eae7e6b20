#include "sim/alloc/replay.h"

#include "sim/config/reader.h"
#include "sim/core/error.h"
#include "sim/run/results.h"

#include <algorithm>
#include <map>

namespace faultline::alloc {
namespace {

using nlohmann::json;

Options read_options(config::Reader r) {
  Options o;
  const uint64_t split_mb = r.get<uint64_t>("max_split_size_mb", 0);
  if (split_mb != 0 && split_mb <= 20)
    r.fail("max_split_size_mb", "expected 0 (no limit) or more than 20, as PyTorch requires");
  if (split_mb != 0) o.max_split_size = split_mb * kMiB;
  o.small_page = r.get<uint64_t>("expandable_small_page", o.small_page);
  o.large_page = r.get<uint64_t>("expandable_large_page", o.large_page);
  o.segment_va = r.get<uint64_t>("expandable_segment_va", o.segment_va);
  o.frag_limit = r.get<uint64_t>("gmlake_frag_limit", o.frag_limit);
  o.reuse_limit = r.get<uint64_t>("gmlake_reuse_limit", o.reuse_limit);
  o.defrag_level = r.get<uint32_t>("gmlake_defrag_level", o.defrag_level);
  o.auto_gc = r.get<uint64_t>("gmlake_auto_gc", o.auto_gc);
  o.realloc_missing = r.get<bool>("gmlake_realloc_missing", o.realloc_missing);
  for (auto [key, value] : {std::pair{"expandable_small_page", o.small_page},
                            std::pair{"expandable_large_page", o.large_page}})
    if (value == 0 || value % kBlockSize != 0) r.fail(key, "expected a positive multiple of 2 MiB");
  if (o.reuse_limit == 0) r.fail("gmlake_reuse_limit", "expected at least 1");
  if (o.defrag_level > 2) r.fail("gmlake_defrag_level", "expected 0, 1 or 2");
  r.finish();
  return o;
}

std::vector<std::string> read_allocators(config::Reader& r) {
  const json list = r.raw("allocators", json{"caching", "expandable", "gmlake"});
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
  return names;
}

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
  c.allocators = read_allocators(r);
  c.capacity = r.get<uint64_t>("capacity_bytes", 0);
  c.device = static_cast<int>(r.get<int64_t>("device", -1));
  c.options = read_options(r.optional_child("options"));
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
