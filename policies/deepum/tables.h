// DeepUM's two kinds of correlation table (Jung et al., ASPLOS '23, doi 10.1145/3575693.3575736,
// §2.3 and §4).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace faultline::policies::deepum {

// Execution-ID correlation: for each ID, records of (the 3 IDs before it, the ID after it),
// unbounded, as the paper keeps them.
class ExecutionTable {
public:
  static constexpr uint64_t kNone = UINT64_MAX;

  // Kernel `id` ran after `before` (oldest first) and was followed by `next`.
  void record(uint64_t id, const uint64_t (&before)[3], uint64_t next);

  // The next ID after `id` given the 3 before it. The record matching all three wins; the paper
  // gives no tie-break, so failing that the latest record whose immediate predecessor matches,
  // and failing that the latest record of `id`.
  std::optional<uint64_t> predict(uint64_t id, const uint64_t (&before)[3]) const;

private:
  struct Record {
    uint64_t before[3];
    uint64_t next;
  };
  std::unordered_map<uint64_t, std::vector<Record>> records_;
};

// One UM-block correlation table: `rows` sets of `assoc` ways, each way a block with up to
// `successors` MRU-ordered successor blocks; plus the first and last faulted block of the
// kernel's last execution (its start and end blocks). Only the sets in use take memory: a model
// has a table per execution ID (a thousand in GPT-2), and most kernels fault a few blocks.
//
// A successor either follows within one execution or `crosses` into the ID's next execution: the
// next execution's first fault after the last one's end block. Crossing successors let a kernel
// that runs many times under one ID over moving data (a sliding window) be chained from one
// execution into the next; a chain counts each crossing as one kernel ahead.
class BlockTable {
public:
  struct Successor {
    uint64_t block;
    bool crosses;
    bool operator==(const Successor& o) const { return block == o.block && crosses == o.crosses; }
  };

  BlockTable(unsigned rows, unsigned assoc, unsigned successors)
      : rows_(rows), assoc_(assoc), successors_(successors) {}

  void add_successor(uint64_t block, uint64_t next, bool crosses = false);
  // Successors of `block`, most recent first; empty if the block has no row. Valid until the
  // next add_successor.
  const std::vector<Successor>& successors(uint64_t block) const;

  std::optional<uint64_t> start, end;

private:
  struct Way {
    uint64_t block;
    std::vector<Successor> next; // MRU first
  };
  unsigned rows_, assoc_, successors_;
  std::unordered_map<uint64_t, std::vector<Way>> sets_; // set in use -> its ways, MRU first
};

} // namespace faultline::policies::deepum
