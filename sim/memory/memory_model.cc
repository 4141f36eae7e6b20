#include "sim/memory/memory_model.h"

#include "sim/core/error.h"

namespace faultline {

PageMask VaBlock::unpopulated() const {
  PageMask held;
  for (const PageMask& r : resident) held |= r;
  return allocated.minus(held);
}

MemoryModel::MemoryModel(unsigned gpus, uint64_t capacity_chunks)
    : MemoryModel(std::vector<uint64_t>(gpus, capacity_chunks)) {}

MemoryModel::MemoryModel(std::vector<uint64_t> capacity_chunks)
    : gpus_(static_cast<unsigned>(capacity_chunks.size())),
      capacity_chunks_(std::move(capacity_chunks)), chunks_used_(gpus_, 0),
      device_chunks_(gpus_, 0), foreign_chunks_(gpus_, 0) {
  if (gpus_ == 0 || gpus_ > kMaxGpus) {
    throw SimulationError("the memory model holds 1 to " + std::to_string(kMaxGpus) + " GPUs");
  }
}

void MemoryModel::add_managed(Addr address, Bytes size, unsigned home) {
  const Addr end = address + size;
  for (uint64_t index = address / kBlockSize; index * kBlockSize < end; ++index) {
    VaBlock& block = blocks_[index];
    block.index = index;
    block.home = home;
    const Addr lo = std::max(address, index * kBlockSize);
    const Addr hi = std::min(end, (index + 1) * kBlockSize);
    const auto first = static_cast<unsigned>((lo - block.base()) / kPageSize);
    const auto last = static_cast<unsigned>((hi - block.base() + kPageSize - 1) / kPageSize);
    block.allocated |= PageMask::range(first, last - first);
  }
}

void MemoryModel::remove_managed(Addr address, Bytes size) {
  std::vector<uint64_t> empty;
  for_each_block(address, size, [&](VaBlock& block, const PageMask& pages) {
    drop(block, pages);
    block.allocated = block.allocated.minus(pages);
    block.discarded = block.discarded.minus(pages); // a new allocation here starts fresh
    block.left_out = block.left_out.minus(pages);
    if (block.allocated.none()) empty.push_back(block.index);
  });
  for (uint64_t index : empty) blocks_.erase(index);
}

void MemoryModel::reserve_device(unsigned gpu, uint64_t chunks) {
  if (chunks > chunks_free(gpu)) {
    throw SimulationError("device allocation of " + std::to_string(chunks) +
                          " chunks does not fit: GPU " + std::to_string(gpu) + " has " +
                          std::to_string(chunks_free(gpu)) + " free chunks after eviction; " +
                          "device memory is never evicted");
  }
  chunks_used_[gpu] += chunks;
  device_chunks_[gpu] += chunks;
}

void MemoryModel::release_device(unsigned gpu, uint64_t chunks) {
  chunks_used_[gpu] -= chunks;
  device_chunks_[gpu] -= chunks;
}

MemoryModel::Moved MemoryModel::move(VaBlock& block, ProcessorId to, const PageMask& pages,
                                     Time now) {
  Moved moved;
  const PageMask wanted = pages & block.allocated;
  block.host_backup = block.host_backup.minus(wanted);
  block.discarded = block.discarded.minus(wanted);
  block.read_since_discard = block.read_since_discard.minus(wanted); // a prefetch undoes it too
  for (ProcessorId p = 0; p <= gpus_; ++p) {
    if (p == to) continue;
    moved.from[p] = block.resident[p] & wanted;
    block.resident[p] = block.resident[p].minus(wanted);
  }
  if (to != kHost && wanted.any()) {
    const unsigned gpu = to - 1;
    if (!block.chunk[gpu]) take_chunk(block, gpu, now);
  }
  for (unsigned g = 0; g < gpus_; ++g) {
    block.remote[g] = block.remote[g] & block.resident[kHost];
  }
  block.resident[to] |= wanted;
  for (unsigned g = 0; g < gpus_; ++g) {
    if (gpu_processor(g) != to) release_chunk_if_empty(block, g);
  }
  return moved;
}

void MemoryModel::drop(VaBlock& block, const PageMask& pages) {
  block.host_backup = block.host_backup.minus(pages);
  block.read_since_discard = block.read_since_discard.minus(pages);
  for (ProcessorId p = 0; p <= gpus_; ++p) block.resident[p] = block.resident[p].minus(pages);
  for (unsigned g = 0; g < gpus_; ++g) {
    block.remote[g] = block.remote[g].minus(pages);
    block.prefetched_unused[g] = block.prefetched_unused[g].minus(pages);
    release_chunk_if_empty(block, g);
  }
}

void MemoryModel::discard(VaBlock& block, const PageMask& pages) {
  PageMask held;
  for (ProcessorId p = 0; p <= gpus_; ++p) held |= block.resident[p];
  block.discarded |= pages & held;
  block.left_out |= pages & block.allocated;
  drop(block, pages);
}

void MemoryModel::take_chunk(VaBlock& block, unsigned gpu, Time now) {
  if (block.chunk[gpu]) return;
  if (chunks_free(gpu) == 0) {
    throw SimulationError("GPU " + std::to_string(gpu) + " has no free chunk for VA block 0x" +
                          std::to_string(block.base()) + "; the caller must evict first");
  }
  block.chunk[gpu] = true;
  block.first_resident[gpu] = now;
  ++block.arrivals[gpu];
  ++chunks_used_[gpu];
  foreign_chunks_[gpu] += block.home != gpu;
  append(block, gpu);
}

void MemoryModel::release_chunk_if_empty(VaBlock& block, unsigned gpu) {
  if (!block.chunk[gpu] || block.resident[gpu_processor(gpu)].any()) return;
  block.chunk[gpu] = false;
  block.prefetched_unused[gpu] = PageMask{};
  --chunks_used_[gpu];
  foreign_chunks_[gpu] -= block.home != gpu;
  unlink(block, gpu);
}

void MemoryModel::touch(VaBlock& block, unsigned gpu) {
  if (!block.chunk[gpu] || tail_[gpu] == &block) return;
  unlink(block, gpu);
  append(block, gpu);
}

VaBlock* MemoryModel::oldest_foreign(unsigned gpu) const {
  if (foreign_chunks_[gpu] == 0) return nullptr;
  VaBlock* b = head_[gpu];
  while (b && b->home == gpu) b = b->next[gpu];
  return b;
}

void MemoryModel::unlink(VaBlock& block, unsigned gpu) {
  (block.prev[gpu] ? block.prev[gpu]->next[gpu] : head_[gpu]) = block.next[gpu];
  (block.next[gpu] ? block.next[gpu]->prev[gpu] : tail_[gpu]) = block.prev[gpu];
  block.prev[gpu] = block.next[gpu] = nullptr;
}

void MemoryModel::append(VaBlock& block, unsigned gpu) {
  block.prev[gpu] = tail_[gpu];
  block.next[gpu] = nullptr;
  (tail_[gpu] ? tail_[gpu]->next[gpu] : head_[gpu]) = &block;
  tail_[gpu] = &block;
}

uint64_t MemoryModel::resident_pages(ProcessorId p) const {
  uint64_t n = 0;
  for (const auto& [index, block] : blocks_) n += block.resident[p].count();
  return n;
}

void MemoryModel::check_invariants() const {
  auto fail = [](const VaBlock& b, const std::string& what) {
    throw SimulationError("memory model invariant broken at VA block " + std::to_string(b.index) +
                          ": " + what);
  };
  std::vector<uint64_t> chunks(gpus_, 0), foreign(gpus_, 0);
  for (const auto& [index, b] : blocks_) {
    PageMask away; // pages on a GPU other than home
    for (unsigned g = 0; g < gpus_; ++g)
      if (g != b.home) away |= b.resident[gpu_processor(g)];
    if (b.host_backup.minus(away).any()) fail(b, "a host backup of pages not away from home");
    if (b.discarded.minus(b.allocated).any()) fail(b, "an unallocated page is discarded");
    if (b.left_out.minus(b.allocated).any()) fail(b, "an unallocated page is left out");
    PageMask on_gpus;
    for (unsigned g = 0; g < gpus_; ++g) on_gpus |= b.resident[gpu_processor(g)];
    if (b.read_since_discard.minus(on_gpus).any())
      fail(b, "a page read since its discard is on no GPU");
    PageMask seen;
    for (ProcessorId p = 0; p <= gpus_; ++p) {
      if ((seen & b.resident[p]).any()) fail(b, "a page is resident in two places");
      if (b.resident[p].minus(b.allocated).any()) fail(b, "an unallocated page is resident");
      if ((b.discarded & b.resident[p]).any()) fail(b, "a discarded page is resident");
      seen |= b.resident[p];
    }
    for (unsigned g = 0; g < gpus_; ++g) {
      if (b.remote[g].minus(b.resident[kHost]).any()) fail(b, "a remote mapping has no host page");
      if (b.chunk[g] != b.resident[gpu_processor(g)].any())
        fail(b, "chunk without pages or pages without chunk");
      chunks[g] += b.chunk[g];
      foreign[g] += b.chunk[g] && b.home != g;
    }
  }
  for (unsigned g = 0; g < gpus_; ++g) {
    uint64_t listed = 0;
    for (const VaBlock* b = head_[g]; b; b = b->next[g]) ++listed;
    const std::string at = "GPU " + std::to_string(g) + ": ";
    if (listed != chunks[g]) {
      throw SimulationError(at + "its eviction list holds " + std::to_string(listed) +
                            " blocks but " + std::to_string(chunks[g]) + " hold chunks");
    }
    if (foreign[g] != foreign_chunks_[g]) {
      throw SimulationError(at + std::to_string(foreign[g]) + " chunks hold other jobs' blocks, " +
                            "counted as " + std::to_string(foreign_chunks_[g]));
    }
    if (chunks[g] > chunks_used_[g] || chunks_used_[g] > capacity_chunks_[g]) {
      throw SimulationError("GPU " + std::to_string(g) + " holds more chunks than its capacity");
    }
  }
}

} // namespace faultline
