#include "policies/schedule/learned_steps.h"

#include <algorithm>
#include <tuple>

namespace faultline::policies::schedule {

using oracle::BlockUse;
using oracle::kPagesPerBlock;
using oracle::PageBits;
using oracle::When;

// A step recorded as unknown, or one that left the schedule, becomes the learned step. (Set-up
// before the first step is never recorded: no step event precedes it.)
void LearnedSteps::step_begin(bool follow) {
  if (in_step_ && !recording_.empty() && (learned_.empty() || deviated_)) {
    for (Kernel& k : recording_) {
      if (k.matched == kUnmatched) continue;
      for (const auto& [block, use] : learned_[k.matched].faulted) {
        auto [it, fresh] = k.faulted.try_emplace(block, use);
        if (!fresh) it->second.pages |= use.pages;
      }
    }
    for (Kernel& k : recording_) rebuild(k);
    learned_ = std::move(recording_);
    index_learned();
  }
  recording_.clear();
  ++version_;
  step_followed_ = false;
  in_step_ = true;
  deviated_ = false;
  paused_ = !follow;
  expected_ = 0;
  following_ = false;
}

void LearnedSteps::launch(uint64_t kernel, const std::string& name,
                          const std::vector<Range>& args) {
  // Whether the kernels ahead read as they did before this launch: it follows the launch before
  // at the next learned position, and its arguments are the learned ones.
  const bool continues = following_ && kernel == anchor_kernel_ + 1;
  const size_t was_expected = expected_;
  following_ = false;
  launched_ = kernel;
  if (!in_step_) return ++version_, void();
  Kernel& seen = recording_.emplace_back();
  seen.name = name;
  seen.args = args;
  rebuild(seen);
  if (learned_.empty() || deviated_ || paused_) return ++version_, void();
  const size_t end = std::min<size_t>(learned_.size(), expected_ + resync_);
  size_t p = expected_;
  while (p < end && learned_[p].name != name) ++p;
  if (p == end) {
    deviated_ = true;
    return ++version_, void();
  }
  following_ = step_followed_ = true;
  anchor_kernel_ = kernel;
  anchor_position_ = p;
  expected_ = p + 1;
  seen.matched = p;
  Kernel& k = learned_[p];
  k.planned_faults = 0;
  const auto same = [](const Range& a, const Range& b) {
    return a.start == b.start && a.bytes == b.bytes;
  };
  if (!std::equal(args.begin(), args.end(), k.args.begin(), k.args.end(), same)) {
    index(p, false);
    k.args = args;
    rebuild(k);
    index(p, true);
    ++version_;
  } else if (!continues || p != was_expected) {
    ++version_;
  }
}

// Recorded with the batch's place in the kernel; learned while following as used all along it
// (the batches of a step that prefetches are not those of the step recorded).
void LearnedSteps::faulted(const std::vector<Addr>& big_pages) {
  if (!in_step_ || recording_.empty()) return;
  if (following_ && !big_pages.empty()) ++version_; // the learned kernel's blocks grow
  Kernel& seen = recording_.back();
  const uint32_t batch = seen.batches++;
  seen.driver_faults += big_pages.size();
  if (following_) learned_[anchor_position_].planned_faults += big_pages.size();
  for (Addr a : big_pages) {
    const uint64_t block = a / kBlockSize;
    const PageBits page = PageBits{1} << (a / kBigPageSize % kPagesPerBlock);
    auto [at, fresh] = seen.faulted.try_emplace(block, BlockUse{block, 0, batch, batch});
    at->second.pages |= page;
    at->second.last = batch;
    if (!following_) continue;
    Kernel& k = learned_[anchor_position_];
    k.faulted.try_emplace(block, BlockUse{block, 0, 0, UINT32_MAX}).first->second.pages |= page;
    if (!add(k, {block, page, 0, UINT32_MAX})) continue;
    std::vector<uint32_t>& positions = positions_[block];
    const auto p = static_cast<uint32_t>(anchor_position_);
    positions.insert(std::lower_bound(positions.begin(), positions.end(), p), p);
  }
}

void LearnedSteps::kernel_end() {
  if (!following_) return;
  Kernel& k = learned_[anchor_position_];
  if (k.planned_faults > k.driver_faults) k.plans_overflow = false;
}

bool LearnedSteps::add(Kernel& k, const BlockUse& use) {
  auto [it, fresh] = k.slot.emplace(use.block, k.blocks.size());
  if (fresh) k.blocks.push_back({use.block, 0, use.first, use.last});
  BlockUse& have = k.blocks[it->second];
  have.pages |= use.pages;
  have.first = std::min(have.first, use.first);
  have.last = std::max(have.last, use.last);
  return fresh;
}

// Faulted blocks with their learned span, then the arguments' other blocks as used all along the
// kernel, all in order of first use.
void LearnedSteps::rebuild(Kernel& k) {
  k.blocks.clear();
  k.slot.clear();
  for (const auto& [block, use] : k.faulted) add(k, use);
  // A block at a time: an argument may span thousands of big pages.
  for (const Range& r : k.args) {
    const uint64_t first = r.start / kBigPageSize,
                   end = (r.start + r.bytes + kBigPageSize - 1) / kBigPageSize;
    for (uint64_t page = first; page < end;) {
      const uint64_t block = page / kPagesPerBlock;
      const uint64_t upto = std::min(end, (block + 1) * kPagesPerBlock);
      const auto lo = static_cast<unsigned>(page % kPagesPerBlock),
                 n = static_cast<unsigned>(upto - page);
      const PageBits pages = n == kPagesPerBlock ? ~PageBits{0} : ((PageBits{1} << n) - 1) << lo;
      auto f = k.faulted.find(block);
      const BlockUse span = f == k.faulted.end() ? BlockUse{0, 0, 0, UINT32_MAX} : f->second;
      add(k, {block, pages, span.first, span.last});
      page = upto;
    }
  }
  std::sort(k.blocks.begin(), k.blocks.end(), [](const BlockUse& a, const BlockUse& b) {
    return std::tie(a.first, a.block) < std::tie(b.first, b.block);
  });
  k.slot.clear();
  for (size_t i = 0; i < k.blocks.size(); ++i) k.slot[k.blocks[i].block] = i;
}

// Adds (or removes) `position` to (from) the positions of its kernel's blocks.
void LearnedSteps::index(size_t position, bool add) {
  const auto p = static_cast<uint32_t>(position);
  for (const BlockUse& use : learned_[position].blocks) {
    std::vector<uint32_t>& at = positions_[use.block];
    auto it = std::lower_bound(at.begin(), at.end(), p);
    if (add && (it == at.end() || *it != p)) at.insert(it, p);
    if (!add && it != at.end() && *it == p) at.erase(it);
  }
}

void LearnedSteps::index_learned() {
  positions_.clear();
  for (size_t p = 0; p < learned_.size(); ++p) index(p, true);
}

size_t LearnedSteps::position(uint64_t kernel) const {
  const uint64_t ahead = kernel > anchor_kernel_ ? kernel - anchor_kernel_ : 0;
  return (anchor_position_ + ahead) % learned_.size();
}

const std::vector<BlockUse>& LearnedSteps::blocks(uint64_t kernel) const {
  if (!following_)
    return arguments_unknown_ && in_step_ && kernel == launched_ && !recording_.empty()
               ? recording_.back().blocks
               : none_;
  if (kernel < anchor_kernel_) return none_;
  return learned_[position(kernel)].blocks;
}

// The learned positions wrap: after the step's last kernel comes the next step's first.
When LearnedSteps::next_use(uint64_t block, When now) const {
  if (!following_) {
    const std::vector<BlockUse>& running = blocks(now.kernel);
    const bool used = std::any_of(running.begin(), running.end(),
                                  [&](const BlockUse& u) { return u.block == block; });
    return used ? now : oracle::kNever;
  }
  auto it = positions_.find(block);
  if (it == positions_.end() || it->second.empty()) return oracle::kNever;
  const std::vector<uint32_t>& at = it->second;
  const uint64_t from = std::max(now.kernel, anchor_kernel_);
  const size_t here = position(from);
  auto next = std::lower_bound(at.begin(), at.end(), here);
  const uint64_t ahead =
      next != at.end() ? *next - here : learned_.size() - here + static_cast<uint64_t>(at.front());
  if (ahead == 0 && from == now.kernel) return now;
  return {from + ahead, 0};
}

} // namespace faultline::policies::schedule
