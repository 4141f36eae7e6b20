#include "sim/trace/inspect.h"

#include "sim/trace/chunks.h"
#include "sim/trace/reader.h"

#include <filesystem>
#include <ostream>
#include <unordered_map>
#include <unordered_set>

namespace faultline::trace {
namespace {

class StatsPass {
public:
  void add(const Record& r) {
    switch (r.type) {
    case RecordType::kAlloc:
      return alloc(r.alloc);
    case RecordType::kFree:
      return free(r.free);
    case RecordType::kKernel:
      return kernel(r.kernel);
    case RecordType::kHostAccess:
      ++s.host_accesses;
      if (r.host.type == AccessType::kRead) s.host_read_bytes += r.host.size;
      return;
    default:
      ++s.syncs;
      s.sync_wait_ns += r.sync.wait;
      return;
    }
  }
  TraceStats s;

private:
  void alloc(const AllocRecord& a) {
    ++s.allocations;
    live_[a.id] = a;
    if (a.kind == MemoryKind::kAllocatorBlock) return;
    (a.kind == MemoryKind::kManaged ? managed_ : device_) += a.size;
    if (a.kind == MemoryKind::kManaged) s.allocated_managed_bytes += a.size;
    chunks_.add(a.address, a.size, +1);
    s.peak_managed_bytes = std::max(s.peak_managed_bytes, managed_);
    s.peak_device_bytes = std::max(s.peak_device_bytes, device_);
    s.footprint_chunks = std::max(s.footprint_chunks, chunks_.live());
  }
  void free(const FreeRecord& f) {
    const AllocRecord a = live_.at(f.id);
    live_.erase(f.id);
    if (a.kind == MemoryKind::kAllocatorBlock) return;
    (a.kind == MemoryKind::kManaged ? managed_ : device_) -= a.size;
    chunks_.add(a.address, a.size, -1);
  }
  void kernel(const KernelRecord& k) {
    ++s.kernels;
    names_.insert(k.name);
    s.distinct_kernel_names = names_.size();
    s.compute_ns += k.duration;
    s.queued_ns += k.queued;
    s.accesses += k.accesses.size();
    for (const Access& a : k.accesses) {
      auto [it, fresh] = last_kernel_.emplace(a.big_page, s.kernels);
      if (!fresh && it->second != s.kernels) ++reused_;
      it->second = s.kernels;
      blocks_.insert(a.big_page / kBigPagesPerBlock);
    }
    s.distinct_big_pages = last_kernel_.size();
    s.distinct_blocks = blocks_.size();
    s.reuse_fraction = s.accesses ? static_cast<double>(reused_) / s.accesses : 0;
  }

  std::unordered_map<uint64_t, AllocRecord> live_;
  std::unordered_set<std::string> names_;
  std::unordered_map<uint64_t, uint64_t> last_kernel_; // big page -> last kernel touching it
  std::unordered_set<uint64_t> blocks_;
  SharedChunks chunks_;
  Bytes managed_ = 0, device_ = 0;
  uint64_t reused_ = 0;
};

nlohmann::json by_step_json(const std::vector<StepCounts>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const StepCounts& c : rows) {
    out.push_back({{"step", c.step},
                   {"first_record", c.first_record},
                   {"start_ns", c.start_ns},
                   {"records", c.records},
                   {"kernels", c.kernels},
                   {"accesses", c.accesses},
                   {"compute_ns", c.compute_ns},
                   {"span_ns", c.span_ns},
                   {"program_ns", c.program_ns > 0 ? nlohmann::json(c.program_ns) : nullptr}});
  }
  return out;
}

// Counts each record into its step's row, opening a row where a step (or the set-up) begins.
void count_step(const TraceReader& reader, const Record& r, std::vector<StepCounts>& rows) {
  if (rows.empty() || rows.back().step != reader.step()) {
    const int64_t step = reader.step();
    const Time start = step < 0 ? r.time() : reader.steps()[static_cast<size_t>(step)].start_ns;
    StepCounts row{step, reader.records() - 1, start, 0, 0, 0};
    const auto& program = reader.program_step_ns();
    if (step >= 0 && static_cast<size_t>(step) < program.size())
      row.program_ns = program[static_cast<size_t>(step)];
    rows.push_back(row);
  }
  StepCounts& c = rows.back();
  ++c.records;
  if (r.type != RecordType::kKernel) return;
  ++c.kernels;
  c.accesses += r.kernel.accesses.size();
  c.compute_ns += r.kernel.duration;
}

} // namespace

nlohmann::json record_json(const Record& r) {
  using nlohmann::json;
  switch (r.type) {
  case RecordType::kAlloc:
    return {{"type", "alloc"},
            {"time", r.alloc.time},
            {"id", r.alloc.id},
            {"kind", to_string(r.alloc.kind)},
            {"address", r.alloc.address},
            {"size", r.alloc.size},
            {"segment", r.alloc.segment}};
  case RecordType::kFree:
    return {{"type", "free"}, {"time", r.free.time}, {"id", r.free.id}};
  case RecordType::kHostAccess:
    return {{"type", "host_access"},
            {"time", r.host.time},
            {"address", r.host.address},
            {"size", r.host.size},
            {"access", faultline::to_string(r.host.type)}};
  case RecordType::kSync:
    return {{"type", "sync"},
            {"time", r.sync.time},
            {"kind", to_string(r.sync.kind)},
            {"stream", r.sync.stream},
            {"wait", r.sync.wait}};
  default:
    break;
  }
  const KernelRecord& k = r.kernel;
  json accesses = json::array();
  for (const Access& a : k.accesses) {
    accesses.push_back({a.big_page * kBigPageSize, a.offset, faultline::to_string(a.type)});
  }
  return {{"type", "kernel"},
          {"time", k.start},
          {"name", k.name},
          {"stream", k.stream},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"duration", k.duration},
          {"queued", k.queued},
          {"args", k.args},
          {"accesses", accesses}};
}

nlohmann::json TraceStats::to_json() const {
  nlohmann::json program = nlohmann::json::array();
  for (const StepCounts& c : by_step)
    if (c.program_ns > 0) program.push_back(c.program_ns);
  return {{"format_version", version},
          {"timeline", to_string(timeline)},
          {"records", records},
          {"kernels", kernels},
          {"distinct_kernel_names", distinct_kernel_names},
          {"accesses", accesses},
          {"allocations", allocations},
          {"host_accesses", host_accesses},
          {"syncs", syncs},
          {"peak_managed_bytes", peak_managed_bytes},
          {"allocated_managed_bytes", allocated_managed_bytes},
          {"host_read_bytes", host_read_bytes},
          {"peak_device_bytes", peak_device_bytes},
          {"footprint_bytes", footprint_bytes()},
          {"distinct_2mb_blocks", distinct_blocks},
          {"distinct_64kb_pages", distinct_big_pages},
          {"compute_ns", compute_ns},
          {"span_ns", span_ns},
          {"sync_wait_ns", sync_wait_ns},
          {"queued_ns", queued_ns},
          {"program_step_ns", program},
          {"reuse_fraction", reuse_fraction},
          {"compressed_bytes", compressed_bytes},
          {"compressed_bytes_per_access",
           accesses ? static_cast<double>(compressed_bytes) / accesses : 0.0},
          {"steps", steps},
          {"by_step", by_step_json(by_step)}};
}

TraceStats compute_stats(const std::string& path) {
  TraceReader reader(path);
  StatsPass pass;
  Record r;
  Time first = -1, last = 0;
  while (reader.next(r)) {
    if (first < 0) first = r.time();
    last = std::max(last,
                    r.type == RecordType::kKernel ? r.kernel.start + r.kernel.duration : r.time());
    pass.add(r);
    count_step(reader, r, pass.s.by_step);
  }
  pass.s.records = reader.records();
  pass.s.steps = reader.steps().size();
  pass.s.span_ns = first < 0 ? 0 : last - first;
  pass.s.version = reader.version();
  pass.s.timeline = reader.timeline();
  auto& rows = pass.s.by_step;
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].span_ns = (i + 1 < rows.size() ? rows[i + 1].start_ns : last) - rows[i].start_ns;
  pass.s.compressed_bytes = std::filesystem::file_size(path);
  return pass.s;
}

void dump(const std::string& path, std::ostream& out) {
  TraceReader reader(path);
  out << nlohmann::json{{"type", "header"},
                        {"version", reader.version()},
                        {"metadata", reader.metadata()}}
             .dump()
      << '\n';
  Record r;
  while (reader.next(r)) out << record_json(r).dump() << '\n';
}

} // namespace faultline::trace
