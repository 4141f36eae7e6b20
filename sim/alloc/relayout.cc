#include "sim/alloc/relayout.h"

#include "sim/core/error.h"
#include "sim/run/results.h"
#include "sim/trace/reader.h"
#include "sim/trace/steps.h"
#include "sim/trace/writer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace faultline::alloc {
namespace {

using trace::MemoryKind;
using trace::Record;
using trace::RecordType;

struct Scan {
  std::set<uint64_t> block_segments; // segment ids that ever hold a block
  uint64_t max_id = 0;
};

Scan scan(const std::string& path) {
  Scan s;
  trace::TraceReader reader(path);
  Record r;
  while (reader.next(r))
    if (r.type == RecordType::kAlloc) {
      s.max_id = std::max(s.max_id, r.alloc.id);
      if (r.alloc.kind == MemoryKind::kAllocatorBlock) s.block_segments.insert(r.alloc.segment);
    }
  return s;
}

struct OldBlock {
  Addr end = 0;
  Addr model_address = 0;
  Bytes size = 0;               // requested
  Bytes accounted = 0;          // the model's block size
  std::vector<uint64_t> pieces; // new block ids
};

class Relayout {
public:
  Relayout(const std::string& allocator, const ReplayConfig& config, const Scan& scan,
           trace::TraceWriter& writer, RelayoutStats& stats)
      : driver_(config.capacity), model_(make_allocator(allocator, config.options, driver_)),
        scan_(scan), writer_(writer), stats_(stats), next_id_(scan.max_id + 1) {}

  void apply(Record& r, const std::string& where) {
    switch (r.type) {
    case RecordType::kAlloc:
      return on_alloc(r.alloc, where);
    case RecordType::kFree:
      return on_free(r.free);
    case RecordType::kKernel:
      return on_kernel(r.kernel);
    case RecordType::kHostAccess:
      if (auto moved = move(r.host.address)) {
        r.host.address = *moved;
        writer_.write(r.host);
      }
      return;
    default:
      writer_.write(r);
    }
  }

  void finish() {
    stats_.model.usage = usage_;
    stats_.model.calls = driver_.calls();
    stats_.model.counters = model_->counters();
    stats_.peak_segment_bytes_after = usage_.peak_reserved;
  }

private:
  void on_alloc(const trace::AllocRecord& a, const std::string& where) {
    if (a.kind != MemoryKind::kAllocatorBlock) {
      if (scan_.block_segments.count(a.id) != 0) return; // the model places these blocks
      kept_[a.address] = a.address + a.size;
      kept_ids_[a.id] = a.address;
      writer_.write(a);
      return;
    }
    const Block b = model_->malloc(a.size, 0);
    if (b.address == 0)
      throw SimulationError(where + ": the allocator model ran out of the " +
                            "config's capacity_bytes placing a block of " + std::to_string(a.size) +
                            " bytes");
    usage_.on_malloc(b.size, a.size, driver_.physical_bytes());
    sync_segments(a.time);
    OldBlock& old = old_[a.address];
    old = {a.address + a.size, b.address, a.size, b.size, {}};
    for (const Fragment& f : driver_.translate(b.address, a.size)) {
      trace::AllocRecord piece{next_id_++, MemoryKind::kAllocatorBlock, f.physical, f.bytes,
                               a.time,     segment_of(f.physical)};
      writer_.write(piece);
      old.pieces.push_back(piece.id);
    }
    by_id_[a.id] = a.address;
    ++stats_.blocks;
    stats_.block_pieces += old.pieces.size();
  }

  void on_free(const trace::FreeRecord& f) {
    auto id = by_id_.find(f.id);
    if (id == by_id_.end()) {
      if (scan_.block_segments.count(f.id) != 0) return;
      if (auto kept = kept_ids_.find(f.id); kept != kept_ids_.end()) {
        kept_.erase(kept->second);
        kept_ids_.erase(kept);
      }
      writer_.write(f);
      return;
    }
    const OldBlock old = old_.at(id->second);
    for (uint64_t piece : old.pieces) writer_.write(trace::FreeRecord{piece, f.time});
    model_->free(old.model_address);
    usage_.on_free(old.accounted, old.size, driver_.physical_bytes());
    old_.erase(id->second);
    by_id_.erase(id);
    sync_segments(f.time);
  }

  void on_kernel(trace::KernelRecord& k) {
    std::vector<uint64_t> args;
    for (uint64_t id : k.args) {
      auto it = by_id_.find(id);
      if (it != by_id_.end()) {
        const auto& pieces = old_.at(it->second).pieces;
        args.insert(args.end(), pieces.begin(), pieces.end());
      } else if (scan_.block_segments.count(id) == 0) {
        args.push_back(id);
      }
    }
    k.args = std::move(args);
    std::vector<trace::Access> accesses;
    for (const trace::Access& a : k.accesses) {
      ++stats_.accesses;
      if (auto moved = move(a.big_page * kBigPageSize))
        accesses.push_back({*moved / kBigPageSize, a.offset, a.type});
      else
        ++stats_.accesses_outside;
    }
    k.accesses = std::move(accesses);
    writer_.write(k);
  }

  // Where an address of the old layout lies now: inside a live block, at the same offset of
  // the block's new home; in a page that only begins before a block, at that block's start; in
  // a kept segment, unchanged.
  std::optional<Addr> move(Addr address) {
    auto it = old_.upper_bound(address);
    if (it != old_.begin() && std::prev(it)->second.end > address) {
      const auto& [start, b] = *std::prev(it);
      return driver_.translate(b.model_address + (address - start), 1).front().physical;
    }
    if (it != old_.end() && it->first < address + kBigPageSize)
      return driver_.translate(it->second.model_address, 1).front().physical;
    auto kept = kept_.upper_bound(address);
    if (kept != kept_.begin() && std::prev(kept)->second > address) return address;
    return std::nullopt;
  }

  // The model's physical allocations become managed segments of the new trace.
  void sync_segments(Time time) {
    const DriverCalls& c = driver_.calls();
    const uint64_t changes = c.malloc + c.free + c.create + c.release;
    if (changes == synced_changes_) return;
    synced_changes_ = changes;
    const auto& now = driver_.physical_ranges();
    for (auto it = emitted_.begin(); it != emitted_.end();) {
      if (now.count(it->first) != 0) {
        ++it;
        continue;
      }
      writer_.write(trace::FreeRecord{it->second, time});
      it = emitted_.erase(it);
    }
    for (const auto& [physical, bytes] : now)
      if (emitted_.count(physical) == 0) {
        trace::AllocRecord seg{next_id_++, MemoryKind::kManaged, physical, bytes, time, 0};
        writer_.write(seg);
        emitted_[physical] = seg.id;
      }
  }

  uint64_t segment_of(Addr physical) const {
    auto it = emitted_.upper_bound(physical);
    return std::prev(it)->second;
  }

  SimDriver driver_;
  std::unique_ptr<Allocator> model_;
  const Scan& scan_;
  trace::TraceWriter& writer_;
  RelayoutStats& stats_;
  uint64_t next_id_;
  Usage usage_;
  std::map<Addr, OldBlock> old_;      // live blocks by old address
  std::map<uint64_t, Addr> by_id_;    // old block id -> old address
  std::map<Addr, Addr> kept_;         // kept segments: start -> end
  std::map<uint64_t, Addr> kept_ids_; // kept segment id -> start
  std::map<Addr, uint64_t> emitted_;  // physical range -> segment id
  uint64_t synced_changes_ = 0;       // malloc, free, create and release calls when last synced
};

} // namespace

RelayoutStats relayout(const std::string& in_path, const std::string& out_path,
                       const std::string& allocator, const ReplayConfig& config) {
  const Scan s = scan(in_path);
  RelayoutStats stats;
  stats.model.allocator = allocator;
  stats.peak_segment_bytes_before = read_history(in_path).recorded.peak_reserved;
  trace::TraceReader reader(in_path);
  nlohmann::json metadata = reader.metadata();
  metadata["relayout"] = {
      {"allocator", allocator}, {"source_trace", in_path}, {"faultline_revision", git_revision()}};
  // The new trace has other records (segments come and go), so its steps begin at other
  // indices: each where the new trace stands when the old step's first record comes.
  const bool has_steps = metadata.contains("steps");
  std::vector<trace::Step> steps = trace::parse_steps(metadata, in_path);
  const std::vector<Time> program = reader.program_step_ns(); // one per step: goes with them
  metadata.erase("steps");
  metadata.erase("program_step_ns");
  trace::TraceWriter writer(out_path, metadata);
  Relayout r(allocator, config, s, writer, stats);
  Record record;
  size_t next_step = 0;
  for (uint64_t old_index = 0; reader.next(record); ++old_index) {
    if (next_step < steps.size() && steps[next_step].first_record == old_index)
      steps[next_step++].first_record = writer.records();
    r.apply(record, reader.where());
  }
  r.finish();
  writer.close();
  if (has_steps) trace::rewrite_steps(out_path, steps, program);
  return stats;
}

nlohmann::json to_json(const RelayoutStats& s) {
  return {{"blocks", s.blocks},
          {"block_pieces", s.block_pieces},
          {"accesses", s.accesses},
          {"accesses_outside_blocks", s.accesses_outside},
          {"peak_segment_bytes_before", s.peak_segment_bytes_before},
          {"peak_segment_bytes_after", s.peak_segment_bytes_after},
          {"model", to_json(s.model)}};
}

} // namespace faultline::alloc
