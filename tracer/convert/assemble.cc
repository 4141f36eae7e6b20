#include "tracer/convert/assemble.h"

#include "sim/core/error.h"
#include "sim/trace/writer.h"
#include "tracer/convert/access_sets.h"
#include "tracer/convert/passes.h"
#include "tracer/convert/program_pass.h"
#include "tracer/convert/sanitized.h"
#include "tracer/convert/steps.h"
#include "tracer/convert/torch_history.h"
#include "tracer/convert/translate.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace faultline::capture {
namespace {

using raw::RawType;
constexpr uint64_t kBigPage = 64 * 1024;

// Emits the timing pass as trace records, merging in PyTorch's block events and host faults.
class Emitter {
public:
  Emitter(trace::TraceWriter& writer, const RawStream& raw, const Pass& pass, Translated& accesses,
          const std::optional<TorchHistory>& history, const CpuClock& clock,
          const ProgramPass* program)
      : w_(writer), raw_(raw), pass_(pass), accesses_(accesses), history_(history), clock_(clock),
        program_(program), start_(clock(pass.range_start)), step_starts_(step_starts(raw, pass)) {
    // An event is due once it or any later event can have happened: PyTorch's microsecond
    // stamps blur the order inside a microsecond (a block freed and its address reallocated
    // just before a launch must both precede it), and the history's own order is exact.
    if (history_) {
      const auto& events = history_->events;
      due_.assign(events.size(), UINT64_MAX);
      for (size_t i = events.size(); i-- > 0;)
        due_[i] = std::min(events[i].time, i + 1 < events.size() ? due_[i + 1] : UINT64_MAX);
    }
    // Host touches recorded by the access pass are complete; CUPTI's CPU faults, a sample, are
    // the fallback.
    for (const raw::RawUm& u : raw.um)
      if (u.counter == static_cast<uint32_t>(raw::UmCounter::kCpuFault) && !accesses.host_touches)
        cpu_faults_.push_back(&u);
    std::stable_sort(cpu_faults_.begin(), cpu_faults_.end(),
                     [](auto* a, auto* b) { return a->start < b->start; });
    // The tear-down after the range (frees at the program's exit) happens at the range's end:
    // the time between the two is the program's, not any step's.
    if (pass_.has_range)
      for (const ApiEvent& e : raw.api)
        if (e.type == RawType::kRange && !e.range.on) range_end_ = e.cpu_time;
    // CUPTI's synchronisation records give each sync's end: how long the CPU waited.
    for (const raw::RawSyncAct& s : raw.syncs)
      sync_end_[s.corr] = std::max(sync_end_[s.corr], s.end);
  }

  void run() {
    bool in_range = !pass_.has_range;
    size_t next_op = 0;
    for (size_t i = 0; i < raw_.api.size(); ++i) {
      const ApiEvent& e = raw_.api[i];
      place_history(e.cpu_time, e);
      if (in_range)
        place_host_faults(e.cpu_time);
      else
        skip_host_faults(e.cpu_time);
      if (e.type == RawType::kRange && pass_.has_range) in_range = e.range.on != 0;
      if (step_starts_[i]) {
        emit_touches_before_mark(next_op, at(e.cpu_time));
        pending_step_ = true;
      }
      emit(e, in_range, next_op, i);
    }
    emit_touches(accesses_.touches_after, last_);
    place_history(UINT64_MAX, {});
  }

  nlohmann::json summary() const {
    return {{"allocations", allocations_},
            {"blocks", blocks_placed_},
            {"unplaced_block_events", unplaced_},
            {"host_faults", host_faults_},
            {"host_touched_pages", host_touched_pages_},
            {"argument_set_kernels", argument_set_kernels_},
            {"argument_set_pages", argument_set_pages_},
            {"syncs", syncs_},
            {"steps", steps_.size()}};
  }

  const std::vector<StepMark>& steps() const { return steps_; }

private:
  struct Segment {
    uint64_t id, size;
    trace::MemoryKind kind;
  };
  struct Block {
    uint64_t id, size;
  };

  // Every record goes through here, so a step's first record is the first written after its mark.
  static Time time_of(const trace::KernelRecord& k) { return k.start; }
  template <typename R> static Time time_of(const R& r) { return r.time; }

  template <typename R> void put(const R& r) {
    if (pending_step_) steps_.push_back({w_.records(), static_cast<int64_t>(time_of(r))});
    pending_step_ = false;
    w_.write(r);
  }

  void emit_touches_before_mark(size_t op, Time time) {
    if (op >= accesses_.touches_before_mark.size() || early_done_.count(op)) return;
    early_done_.insert(op);
    emit_touches(accesses_.touches_before_mark[op], time);
  }

  // A page read and then written counts as written; runs of adjacent pages of one type become
  // one host access record each.
  void emit_touches(const std::vector<HostTouch>& touches, Time time) {
    std::map<uint64_t, AccessType> pages;
    for (const HostTouch& t : touches) {
      auto [it, fresh] = pages.emplace(t.address, t.type);
      if (!fresh && t.type == AccessType::kWrite) it->second = AccessType::kWrite;
    }
    for (auto it = pages.begin(); it != pages.end();) {
      auto end = std::next(it);
      uint64_t n = 1;
      while (end != pages.end() && end->second == it->second &&
             end->first == it->first + n * kBigPage)
        ++end, ++n;
      put(trace::HostAccessRecord{time, it->first, n * kBigPage, it->second});
      host_touched_pages_ += n;
      it = end;
    }
  }

  // A CPU time of the timing pass as trace time: on the program pass's clock where there is one.
  Time at(uint64_t cpu_time) {
    if (range_end_) cpu_time = std::min(cpu_time, range_end_);
    const uint64_t now = clock_(cpu_time);
    Time t = now > start_ ? static_cast<Time>(now - start_) : 0;
    last_ = std::max(last_, t);
    return last_;
  }

  void emit(const ApiEvent& e, bool in_range, size_t& next_op, size_t index) {
    switch (e.type) {
    case RawType::kAlloc:
      return alloc_segment(e);
    case RawType::kFree:
      return free_segment(e);
    case RawType::kSync:
      if (in_range) {
        auto end = sync_end_.find(e.sync.corr);
        put(trace::SyncRecord{
            at(e.cpu_time), static_cast<trace::SyncKind>(e.sync.op), stream_of(e.sync.handle),
            end == sync_end_.end() ? 0 : wait_until(clock_(e.cpu_time), clock_(end->second))});
        ++syncs_;
      }
      return;
    case RawType::kLaunch:
    case RawType::kCopy:
      if (next_op < pass_.ops.size() && pass_.ops[next_op].api_index == index) {
        streams_[e.type == RawType::kLaunch ? e.launch.stream : e.copy.stream] =
            pass_.ops[next_op].stream;
        if (in_range && next_op < accesses_.touches_before.size()) {
          emit_touches_before_mark(next_op, at(e.cpu_time));
          emit_touches(accesses_.touches_before[next_op], at(e.cpu_time));
        }
        if (accesses_.argument_sets[next_op]) add_argument_pages(pass_.ops[next_op], next_op);
        emit_operation(next_op, accesses_.per_op[next_op]);
        // A blocking cudaMemcpy returns once its copy is done: the CPU's wait is a sync.
        if (in_range && e.type == RawType::kCopy && e.copy.pad == raw::kCopyBlocking) {
          const Operation& op = pass_.ops[next_op];
          put(trace::SyncRecord{at(e.cpu_time), trace::SyncKind::kStream, op.stream,
                                wait_until(clock_(e.cpu_time), clock_(op.gpu_end))});
          ++syncs_;
        }
        ++next_op;
      }
      return;
    default:
      return;
    }
  }

  // The CPU's wait from `cpu_time` to `end` (0 when the end is unknown or not later).
  static Time wait_until(uint64_t cpu_time, uint64_t end) {
    return end > cpu_time ? static_cast<Time>(end - cpu_time) : 0;
  }

  uint32_t stream_of(uint64_t handle) const {
    auto it = streams_.find(handle);
    return it == streams_.end() ? 0 : it->second;
  }

  void alloc_segment(const ApiEvent& e) {
    trace::AllocRecord r;
    r.id = next_id_++;
    r.kind = e.alloc.kind == static_cast<uint32_t>(raw::AllocKind::kManaged)
                 ? trace::MemoryKind::kManaged
                 : trace::MemoryKind::kDevice;
    r.address = e.alloc.address;
    r.size = e.alloc.bytes;
    r.time = at(e.cpu_time);
    segments_[r.address] = {r.id, r.size, r.kind};
    ++allocations_;
    put(r);
  }

  void free_segment(const ApiEvent& e) {
    auto it = segments_.find(e.free.address);
    if (it == segments_.end())
      return; // a free of memory allocated before the tracer started, or of a null pointer
    // Blocks inside the segment end with it (PyTorch frees a segment only when it is empty).
    auto b = blocks_.lower_bound(it->first);
    while (b != blocks_.end() && b->first < it->first + it->second.size) {
      put(trace::FreeRecord{b->second.id, at(e.cpu_time)});
      b = blocks_.erase(b);
    }
    put(trace::FreeRecord{it->second.id, at(e.cpu_time)});
    segments_.erase(it);
  }

  const std::pair<const uint64_t, Segment>* segment_at(uint64_t address) const {
    auto it = segments_.upper_bound(address);
    if (it == segments_.begin()) return nullptr;
    --it;
    return address < it->first + it->second.size ? &*it : nullptr;
  }

  // A kernel whose operands arrive by tensor-map copies (no patch sees them): the allocations
  // its arguments name join its set, after the pages it was seen touching, as reads.
  void add_argument_pages(const Operation& op, size_t index) {
    auto& accesses = accesses_.per_op[index];
    std::unordered_map<uint64_t, bool> have;
    for (const trace::Access& a : accesses) have[a.big_page] = true;
    ++argument_set_kernels_;
    for (uint64_t word : op.pointers) {
      auto [base, size] = innermost_range(word);
      if (!size) continue;
      for (uint64_t p = base / kBigPage; p <= (base + size - 1) / kBigPage; ++p)
        if (have.emplace(p, true).second) {
          accesses.push_back({p, 0, AccessType::kRead});
          ++argument_set_pages_;
        }
    }
  }

  // The innermost live managed allocation holding `address`, as (base, size); size 0 if none.
  // With PyTorch's blocks known, a word in a segment but in no live block names nothing (a stale
  // pointer, or one inside a tensor map's descriptor): the whole segment would overstate it.
  std::pair<uint64_t, uint64_t> innermost_range(uint64_t address) const {
    auto b = blocks_.upper_bound(address);
    if (b != blocks_.begin() && address < std::prev(b)->first + std::prev(b)->second.size)
      return {std::prev(b)->first, std::prev(b)->second.size};
    if (history_) return {0, 0};
    auto* s = segment_at(address);
    if (!s || s->second.kind != trace::MemoryKind::kManaged) return {0, 0};
    return {s->first, s->second.size};
  }

  // The innermost live allocation holding `address`: its block if PyTorch named one.
  uint64_t allocation_at(uint64_t address) const {
    auto b = blocks_.upper_bound(address);
    if (b != blocks_.begin() && address < std::prev(b)->first + std::prev(b)->second.size)
      return std::prev(b)->second.id;
    auto* s = segment_at(address);
    return s ? s->second.id : 0;
  }

  void emit_operation(size_t index, std::vector<trace::Access>& accesses) {
    const Operation& op = pass_.ops[index];
    trace::KernelRecord k;
    k.name = op.name;
    k.stream = op.stream;
    k.grid = {op.grid[0], op.grid[1], op.grid[2]};
    k.block = {op.block[0], op.block[1], op.block[2]};
    k.start = at(op.cpu_time);
    k.duration = static_cast<Time>(op.gpu_end > op.gpu_start ? op.gpu_end - op.gpu_start : 0);
    // How long the GPU held the kernel after its launch: the program's own, where it ran alone.
    k.queued = program_ ? wait_until(program_->ops[index].cpu_time, program_->ops[index].gpu_start)
                        : wait_until(op.cpu_time, op.gpu_start);
    for (uint64_t word : op.pointers)
      if (uint64_t id = allocation_at(word);
          id && std::find(k.args.begin(), k.args.end(), id) == k.args.end())
        k.args.push_back(id);
    // The access pass gives order, not time: accesses are spread evenly over the duration.
    const size_t n = accesses.size();
    for (size_t j = 0; j < n; ++j)
      accesses[j].offset = static_cast<Time>(static_cast<__int128>(k.duration) * j / n);
    k.accesses = std::move(accesses);
    put(k);
  }

  void place_history(uint64_t now, const ApiEvent& e) {
    if (!history_) return;
    const auto& events = history_->events;
    // Frees of blocks in a segment about to be freed go first, whatever their time bound.
    const auto* freed =
        now != UINT64_MAX && e.type == RawType::kFree ? segment_at(e.free.address) : nullptr;
    while (next_history_ < events.size()) {
      const BlockEvent& b = events[next_history_];
      const bool due =
          due_[next_history_] <= now || (freed && !b.alloc && b.address >= freed->first &&
                                         b.address < freed->first + freed->second.size);
      if (!due) return;
      if (b.alloc && !place_block(b, now)) {
        // Its segment's allocation precedes it by less than its microsecond: wait that long for
        // the segment, then give up on the block (a segment the tracer does not see).
        if (now != UINT64_MAX && now < b.time + 1000) return;
        ++unplaced_;
      } else if (!b.alloc) {
        free_block(b, now);
      }
      ++next_history_;
    }
  }

  bool place_block(const BlockEvent& b, uint64_t now) {
    auto* s = segment_at(b.address);
    if (!s || b.address + b.size > s->first + s->second.size) return false;
    trace::AllocRecord r;
    r.id = next_id_++;
    r.kind = trace::MemoryKind::kAllocatorBlock;
    r.address = b.address;
    r.size = b.size;
    r.time = at(std::min(b.time, now));
    r.segment = s->second.id;
    blocks_[b.address] = {r.id, b.size};
    ++blocks_placed_;
    put(r);
    return true;
  }

  void free_block(const BlockEvent& b, uint64_t now) {
    auto it = blocks_.find(b.address);
    if (it == blocks_.end()) {
      ++unplaced_;
      return;
    }
    put(trace::FreeRecord{it->second.id, at(std::min(b.time, now))});
    blocks_.erase(it);
  }

  void skip_host_faults(uint64_t now) {
    while (next_fault_ < cpu_faults_.size() && cpu_faults_[next_fault_]->start <= now)
      ++next_fault_;
  }

  void place_host_faults(uint64_t now) {
    for (; next_fault_ < cpu_faults_.size() && cpu_faults_[next_fault_]->start <= now;
         ++next_fault_) {
      const raw::RawUm& u = *cpu_faults_[next_fault_];
      auto* s = segment_at(u.address);
      if (!s || s->second.kind != trace::MemoryKind::kManaged) continue;
      put(trace::HostAccessRecord{at(u.start), u.address & ~uint64_t(4095), 4096,
                                  AccessType::kRead});
      ++host_faults_;
    }
  }

  trace::TraceWriter& w_;
  const RawStream& raw_;
  const Pass& pass_;
  Translated& accesses_;
  const std::optional<TorchHistory>& history_;
  const CpuClock& clock_;
  const ProgramPass* program_; // aligned with pass_.ops; null without a program pass
  uint64_t start_;             // the range's start on the records' clock
  std::vector<const raw::RawUm*> cpu_faults_;
  std::map<uint64_t, Segment> segments_;
  std::map<uint64_t, Block> blocks_;
  std::unordered_map<uint64_t, uint32_t> streams_;
  std::unordered_map<uint32_t, uint64_t> sync_end_; // correlation id -> end of its sync record
  uint64_t syncs_ = 0;
  uint64_t range_end_ = 0; // CPU time of the range's last end (0: none)
  uint64_t next_id_ = 1;
  std::vector<uint64_t> due_; // per history event: the earliest bound of it and all later ones
  size_t next_history_ = 0, next_fault_ = 0;
  Time last_ = 0;
  uint64_t allocations_ = 0, blocks_placed_ = 0, unplaced_ = 0, host_faults_ = 0;
  uint64_t host_touched_pages_ = 0, argument_set_kernels_ = 0, argument_set_pages_ = 0;
  std::vector<bool> step_starts_;
  std::set<size_t> early_done_; // ops whose touches before their step mark are written
  bool pending_step_ = false;
  std::vector<StepMark> steps_;
};

std::vector<uint64_t> allocation_addresses(const RawStream& raw) {
  std::vector<uint64_t> out;
  for (const ApiEvent& e : raw.api)
    if (e.type == RawType::kAlloc) out.push_back(e.alloc.address);
  return out;
}

void require_clean(const RawStream& raw) {
  if (!raw.error.empty())
    throw TraceError(raw.path + ": the capture stopped the program: " + raw.error);
}

// Operations of the timing pass during which data still migrated to the GPU: their durations
// are not all-resident.
uint64_t faulting_operations(const RawStream& raw, const Pass& pass) {
  std::vector<uint64_t> starts;
  for (const raw::RawUm& u : raw.um)
    if (u.counter == static_cast<uint32_t>(raw::UmCounter::kHtoD) &&
        u.flags == static_cast<uint32_t>(raw::MigrationCause::kCoherence))
      starts.push_back(u.start);
  std::sort(starts.begin(), starts.end());
  uint64_t n = 0;
  for (const Operation& op : pass.ops) {
    auto it = std::lower_bound(starts.begin(), starts.end(), op.gpu_start);
    n += it != starts.end() && *it <= op.gpu_end;
  }
  return n;
}

nlohmann::json header(const ConvertRequest& request, const RawStream& timing,
                      const std::optional<TorchHistory>& history) {
  nlohmann::json h = request.metadata;
  h["source"] = "faultline capture";
  h["gpu"] = timing.meta.value("gpu", "unknown");
  if (timing.meta.contains("cuda_driver_api")) {
    int v = timing.meta["cuda_driver_api"].get<int>();
    h["cuda"] = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  }
  if (history) h["pytorch"] = history->torch_version;
  // Records carry the CPU's issue times and every wait of the CPU on the GPU is a sync record.
  h["timeline"] = "issue";
  return h;
}

// How the access pass drained CUPTI's unified-memory queue, as its injection library reported.
nlohmann::json draining(const RawStream& access) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key :
       {"drain_bytes", "drain_every", "flush", "access_drains", "access_drain_seconds",
        "access_evict_named_seconds", "access_evict_rest_seconds"})
    if (access.meta.contains(key)) out[key] = access.meta[key];
  return out;
}

// What the timing pass's injection library reported of its own cost: launches, the callback's
// cost per launch, prefetches, and the part of the pass a cost probe left out (FAULTLINE_PROBE),
// whose trace's timeline is then not the pass as it normally runs.
nlohmann::json timing_meta(const RawStream& timing) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : {"timing_launches", "timing_launch_cost_median_ns",
                          "timing_launch_cost_p90_ns", "timing_prefetches", "probe"})
    if (timing.meta.contains(key) && timing.meta[key] != "") out[key] = timing.meta[key];
  return out;
}

// What the sanitize pass's injection library reported: window, patching, host touches.
nlohmann::json sanitize_meta(const RawStream& access) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key :
       {"page_window_base", "page_window_bytes", "allocations_outside_window", "kernels_recorded",
        "kernels_overflowed", "warpgroup_mma_kernels", "modules_patched", "optional_patch_failures",
        "host_touches", "host_touch_reads", "host_touch_writes", "host_touches_lost"})
    if (access.meta.contains(key)) out[key] = access.meta[key];
  return out;
}

} // namespace

nlohmann::json convert_capture(const ConvertRequest& request) {
  RawStream timing = read_raw(request.timing_path);
  RawStream access = read_raw(request.access_path);
  require_clean(timing);
  require_clean(access);
  Pass tpass = build_pass(timing);
  Pass apass = build_pass(access);
  const uint64_t differing_arguments = align_passes(timing, tpass, access, apass);
  AccessSets sets = is_sanitized(access) ? sanitized_access_sets(access, apass)
                                         : assemble_access_sets(access, apass);
  Translated translated = translate(access, apass, sets, allocation_addresses(timing));
  std::optional<TorchHistory> history;
  if (!request.history_path.empty()) history = read_torch_history(request.history_path);
  std::optional<RawStream> program;
  std::optional<ProgramPass> ppass;
  CpuClock clock;
  if (!request.program_path.empty()) {
    program = read_raw(request.program_path);
    require_clean(*program);
    ppass = build_program_pass(*program);
    clock = CpuClock(timing, tpass, *program, *ppass);
  }

  nlohmann::json summary = {
      {"operations", tpass.ops.size()},
      {"access_pages", sets.pages},
      {"access_recorder", is_sanitized(access) ? "sanitize" : "cupti"},
      {"access_pages_ordered", sets.ordered_pages},
      {"device_memory_pages_left_out", sets.device_pages},
      {"pages_in_no_allocation", sets.unowned_pages},
      {"accesses_outside_page_window", sets.outside_accesses},
      {"untranslated_pages", translated.untranslated},
      // Unknown without the unified-memory counters, which the timing pass leaves off.
      {"timing_pass_faulting_operations", timing.meta.value("um_counters", true)
                                              ? nlohmann::json(faulting_operations(timing, tpass))
                                              : nlohmann::json(nullptr)},
      {"operations_with_differing_argument_allocations", differing_arguments},
      {"unattributed_gpu_operations",
       {{"timing", tpass.unattributed}, {"access", apass.unattributed}}},
      {"dropped_records", {{"timing", timing.dropped}, {"access", access.dropped}}},
      {"syncs_from_activity", timing.synthesized_syncs},
      {"access_pass_draining", is_sanitized(access) ? nlohmann::json(nullptr) : draining(access)},
      {"sanitize", sanitize_meta(access)},
      {"timing", timing_meta(timing)},
      // The CPU's clock the records' times are on: the program pass's, or the timing pass's.
      {"cpu_clock", ppass ? "program pass" : "timing pass"},
      {"program_pass", clock.summary()}};
  nlohmann::json meta = header(request, timing, history);
  meta["capture"] = summary;
  trace::TraceWriter writer(request.out_path, meta);
  Emitter emitter(writer, timing, tpass, translated, history, clock, ppass ? &*ppass : nullptr);
  emitter.run();
  writer.close();
  if (!emitter.steps().empty())
    write_steps(request.out_path, emitter.steps(), program_step_ns(timing, tpass, clock));
  summary.update(emitter.summary());
  return summary;
}

} // namespace faultline::capture
