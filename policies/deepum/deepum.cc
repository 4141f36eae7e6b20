// deepum: DeepUM (Jung et al., ASPLOS '23, doi 10.1145/3575693.3575736) as its paper describes
// it (§3-§5). Kernels get execution IDs (hash of name and argument
// blocks); per ID a UM-block correlation table learns which 2 MB block faults after which, and an
// execution table learns which ID follows which three. A fault starts a chain: the faulted
// block's successors are prefetched, then theirs, and at a kernel's end block the next kernel is
// predicted and the chain goes on from its start block, up to N kernels ahead (then it pauses
// until the running kernel ends). Pre-eviction keeps free room by evicting the least recently
// migrated blocks outside the predicted window; blocks the allocator has freed are discarded
// instead of written back. Each part can be switched off for the paper's ablation.
#include "policies/deepum/tables.h"
#include "policies/freed_blocks.h"
#include "policies/registry.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"

#include <functional>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace faultline::policies::deepum {
namespace {

constexpr uint64_t kNone = ExecutionTable::kNone;

struct Params {
  bool prefetch = true, pre_evict = true, discard_freed = true;
  uint32_t prefetch_kernels = 32, rows = 2048, assoc = 2, successors = 4;
  uint64_t free_blocks = 8; // room pre-eviction keeps free, in 2 MB blocks
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::prefetch, "prefetch", "correlation prefetching"),
      config::field(&Params::pre_evict, "pre_evict",
                    "pre-eviction of least recently migrated blocks outside the window"),
      config::field(&Params::discard_freed, "discard_freed",
                    "discard victims' pages in freed allocator blocks"),
      config::field(&Params::prefetch_kernels, "prefetch_kernels",
                    "N: how many kernels ahead a chain may run")
          .unit("kernels")
          .at_least(1),
      config::field(&Params::rows, "table_rows", "block-table rows").at_least(1),
      config::field(&Params::assoc, "table_assoc", "block-table ways").at_least(1),
      config::field(&Params::successors, "table_successors", "MRU successors per entry")
          .at_least(1),
      config::field(&Params::free_blocks, "pre_evict_free_blocks",
                    "free blocks pre-eviction keeps (at most a quarter of the GPU)")
          .unit("2 MB blocks"),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.deepum", "`policy.params` of policy deepum", fields);

// Where a prefetch chain stands: a block in the table of a kernel `ahead` kernels after the
// running one, with the three IDs executed (or predicted) before that kernel.
struct Cursor {
  uint64_t id;
  uint64_t block;
  unsigned ahead;
  uint64_t before[3];
};

class DeepUM : public IPolicy {
public:
  DeepUM(const nlohmann::json& params, const std::string& where)
      : p_(config::read_object(params, where, "$.policy.params", fields())) {}

  void on_start(const StartEvent& e, Actions&) override {
    capacity_ = e.gpu_capacity / kBlockSize;
    gpu_ = gpu_processor(e.gpu);
  }

  void on_alloc(const AllocEvent& e, Actions&) override {
    if (!e.managed && !e.block) device_ += blocks_in(e.range);
    if (e.block) inactive_.alloc(e.id, e.range);
  }

  void on_free(const FreeEvent& e, Actions&) override {
    if (!e.managed && !e.block) device_ -= blocks_in(e.range);
    if (e.block && p_.discard_freed) inactive_.free(e.id, e.range);
    if (e.managed && !e.block)
      for (uint64_t b = e.range.start / kBlockSize; b * kBlockSize < e.range.start + e.range.bytes;
           ++b)
        drop(b);
  }

  void on_kernel_launch(const LaunchEvent& e, Actions&) override {
    kernel_ids_.push_back(execution_id(e));
    if (e.kernel == running_) begin_kernel();
  }

  void on_kernel_end(const KernelEndEvent& e, Actions& out) override {
    if (e.kernel != running_) return;
    BlockTable& t = table(kernel_ids_[running_]);
    if (last_fault_) t.end = last_fault_;
    ++running_;
    if (running_ < kernel_ids_.size()) begin_kernel();
    if (paused_ && p_.prefetch) { // the window moved one kernel on
      Cursor c = *paused_;
      paused_.reset();
      c.ahead = c.ahead > 0 ? c.ahead - 1 : 0;
      chain(c, out);
    }
  }

  bool observes_faults() const override { return true; }
  // §3.1: the migration thread serves the fault queue before the prefetch queue.
  bool prefetches_behind_faults() const override { return true; }
  void on_fault_batch(const FaultBatchEvent& e, Actions& out) override {
    if (running_ >= kernel_ids_.size()) return;
    const uint64_t id = kernel_ids_[running_];
    std::optional<uint64_t> previous_block;
    for (Addr a : e.faults) {
      const uint64_t b = a / kBlockSize;
      if (b == previous_block) continue;
      previous_block = b;
      learn_fault(id, b);
      migrated(b);
      protect(b, 0);
    }
    if (p_.prefetch && last_fault_) { // a new fault ends the old chain and starts one here
      paused_.reset();
      Cursor c{id, *last_fault_, 0, {}};
      std::copy(before_, before_ + 3, c.before);
      chain(c, out);
    }
    make_room(0, out);
  }

private:
  static uint64_t blocks_in(const Range& r) { return (r.bytes + kBlockSize - 1) / kBlockSize; }

  uint64_t execution_id(const LaunchEvent& e) {
    size_t h = std::hash<std::string>{}(e.name ? *e.name : std::string());
    for (const Range& r : e.args) h = h * 1000003 ^ std::hash<uint64_t>{}(r.start) ^ (r.bytes << 1);
    return ids_.emplace(h, ids_.size()).first->second;
  }

  BlockTable& table(uint64_t id) {
    return tables_.try_emplace(id, p_.rows, p_.assoc, p_.successors).first->second;
  }

  // The running kernel changes: record the transition in the execution table.
  void begin_kernel() {
    const uint64_t id = kernel_ids_[running_];
    if (running_ > 0) {
      const uint64_t previous = kernel_ids_[running_ - 1];
      exec_.record(previous, before_previous_, id);
      std::copy(before_, before_ + 3, before_previous_);
      before_[0] = before_[1];
      before_[1] = before_[2];
      before_[2] = previous;
    }
    last_fault_.reset();
  }

  // Each fault becomes the MRU successor of the previous fault under the same ID; the first
  // fault of an execution, of the last execution's end block (a crossing successor).
  void learn_fault(uint64_t id, uint64_t block) {
    BlockTable& t = table(id);
    if (!last_fault_) {
      if (t.end && *t.end != block) t.add_successor(*t.end, block, true);
      t.start = block;
    } else if (*last_fault_ != block) {
      t.add_successor(*last_fault_, block);
    }
    last_fault_ = block;
  }

  // Follows successors and predicted kernels, prefetching, until the chain runs out, loops,
  // reaches N kernels ahead (pause) or finds no room.
  void chain(Cursor c, Actions& out) {
    chain_seen_.clear();
    chain_fetched_.clear();
    for (;;) {
      if (!chain_seen_.insert({c.block, c.ahead}).second) return;
      BlockTable& t = table(c.id);
      std::optional<uint64_t> follow, cross; // MRU successor within the execution, and across
      for (const BlockTable::Successor& s : t.successors(c.block)) {
        if (s.crosses) {
          if (!cross) cross = s.block;
          continue;
        }
        if (!follow) follow = s.block;
        if (!prefetch(s.block, c.ahead, out)) return;
      }
      if (follow && c.block != t.end) {
        c.block = *follow;
        continue;
      }
      const std::optional<uint64_t> predicted = exec_.predict(c.id, c.before);
      if (!predicted) return;
      // The predicted kernel's first block: for the same ID again, where this block's crossing
      // successor led (its executions may move over the data); else the kernel's start block.
      const std::optional<uint64_t> first =
          *predicted == c.id && cross ? cross : table(*predicted).start;
      if (!first) return;
      if (c.ahead + 1 >= p_.prefetch_kernels) {
        paused_ = c;
        return;
      }
      c = {*predicted, *first, c.ahead + 1, {c.before[1], c.before[2], c.id}};
      if (!prefetch(c.block, c.ahead, out)) return;
    }
  }

  // A chain fetches a block once (its first use is the one that counts) and, into a full GPU,
  // no more blocks than the GPU holds: past that it would evict what it fetched itself.
  bool prefetch(uint64_t block, unsigned ahead, Actions& out) {
    protect(block, ahead);
    if (resident_.count(block) || chain_fetched_.count(block)) return true;
    if (chain_fetched_.size() >= room()) return false;
    chain_fetched_.insert(block);
    if (!make_room(1, out)) return false;
    out.push_back({ActionKind::kPrefetch, {block * kBlockSize, kBlockSize}, gpu_});
    migrated(block);
    return true;
  }

  uint64_t room() const { return capacity_ > device_ ? capacity_ - device_ : 0; }

  // Pre-eviction: keeps `incoming` plus the reserve free by evicting the least recently
  // migrated blocks the window does not protect. Without it, a prefetch into a full GPU makes
  // the driver evict, on the prefetch's path.
  bool make_room(uint64_t incoming, Actions& out) {
    if (!p_.pre_evict) return true; // the driver evicts on demand, as in the paper's first step
    const uint64_t reserve = std::min<uint64_t>(p_.free_blocks, room() / 4);
    for (auto it = order_.begin();
         it != order_.end() && resident_.size() + incoming + reserve > room();) {
      const uint64_t b = *it++;
      auto guard = protected_until_.find(b);
      if (guard != protected_until_.end() && guard->second >= running_) continue;
      evict(b, out);
    }
    return resident_.size() + incoming <= room();
  }

  // A victim's pages inside freed allocator blocks are dead: discarded, not written back.
  void evict(uint64_t block, Actions& out) {
    const Addr start = block * kBlockSize;
    inactive_.for_each_in(start, start + kBlockSize, [&](Addr from, Addr to) {
      out.push_back({ActionKind::kDiscard, {from, to - from}, kHost});
    });
    out.push_back({ActionKind::kEvict, {start, kBlockSize}, kHost});
    drop(block);
  }

  // Residency as the policy can know it: what it and the faults brought in, less what it
  // evicted. Past the GPU's room the driver must have evicted, in its FIFO order: the oldest.
  void migrated(uint64_t block) {
    auto it = resident_.find(block);
    if (it != resident_.end()) return;
    order_.push_back(block);
    resident_[block] = std::prev(order_.end());
    while (resident_.size() > std::max<uint64_t>(room(), 1)) drop(order_.front());
  }

  void drop(uint64_t block) {
    auto it = resident_.find(block);
    if (it == resident_.end()) return;
    order_.erase(it->second);
    resident_.erase(it);
  }

  void protect(uint64_t block, unsigned ahead) {
    uint64_t& until = protected_until_[block];
    until = std::max(until, running_ + ahead);
  }

  Params p_;
  uint64_t capacity_ = 0, device_ = 0;
  ProcessorId gpu_ = gpu_processor(0);
  std::unordered_map<size_t, uint64_t> ids_;   // hash of name and arguments -> execution ID
  std::vector<uint64_t> kernel_ids_;           // by kernel index
  uint64_t running_ = 0;                       // index of the kernel executing now
  uint64_t before_[3] = {kNone, kNone, kNone}; // IDs before the running kernel
  uint64_t before_previous_[3] = {kNone, kNone, kNone}; // IDs before the previous one
  ExecutionTable exec_;
  std::unordered_map<uint64_t, BlockTable> tables_;
  std::optional<uint64_t> last_fault_; // in the running kernel's execution
  std::optional<Cursor> paused_;
  std::unordered_set<uint64_t> chain_fetched_; // blocks the current chain has prefetched
  // (block, kernels ahead) the current chain has visited; a member for its memory.
  struct BlockAhead {
    size_t operator()(const std::pair<uint64_t, unsigned>& k) const {
      return std::hash<uint64_t>{}(k.first * 1000003 + k.second);
    }
  };
  std::unordered_set<std::pair<uint64_t, unsigned>, BlockAhead> chain_seen_;
  std::list<uint64_t> order_; // resident blocks, least recently migrated first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> resident_;
  std::unordered_map<uint64_t, uint64_t> protected_until_; // block -> last kernel index needing it
  FreedBlocks inactive_;                                   // freed allocator blocks
};

} // namespace

FAULTLINE_REGISTER_POLICY(DeepUM, "deepum");

} // namespace faultline::policies::deepum
