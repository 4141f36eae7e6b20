#include "sim/live/books.h"

#include <algorithm>

namespace faultline::live {
namespace {

// Calls f(chunk, page bit) for each 64 KB big page [address, address + n) overlaps, as the books
// count pages (forget).
template <typename F> void for_pages(uint64_t address, Bytes n, F f) {
  for (uint64_t q = address / kBigPageSize; q * kBigPageSize < address + n; ++q)
    f(q / kBigPagesPerBlock, 1u << (q % kBigPagesPerBlock));
}

} // namespace

void Books::add(Addr address, Bytes size, uint32_t slot, void* live) {
  if (slot_base_.size() <= slot) slot_base_.resize(slot + 1);
  slot_base_[slot] = reinterpret_cast<uint64_t>(live);
  live_[address] = {live, size};
  by_live_[reinterpret_cast<uint64_t>(live)] = {size, address};
}

void* Books::remove(Addr address) {
  auto it = live_.find(address);
  if (it == live_.end()) return nullptr;
  void* p = it->second.live;
  const Bytes size = it->second.size;
  forget(p, size);
  const auto base = reinterpret_cast<uint64_t>(p);
  for (uint64_t c = base / kBlockSize; c * kBlockSize < base + size; ++c) touched_.erase(c);
  note_discarded(base, size, false);
  by_live_.erase(base);
  live_.erase(it);
  return p;
}

std::vector<void*> Books::live_pointers() const {
  std::vector<void*> out;
  for (const auto& [address, a] : live_) out.push_back(a.live);
  return out;
}

Addr Books::to_trace(uint64_t live) const {
  auto it = by_live_.upper_bound(live);
  if (it == by_live_.begin()) return kNoAddress;
  --it;
  if (live >= it->first + it->second.size) return kNoAddress;
  return it->second.trace + (live - it->first);
}

std::vector<host::ChunkPages> Books::live_chunks(const Plan& plan, const Kernel& k) const {
  std::vector<host::ChunkPages> out;
  out.reserve(k.chunk_count);
  for (uint64_t i = k.first_chunk; i < k.first_chunk + k.chunk_count; ++i) {
    const SlotChunk& c = plan.chunks[i];
    const uint64_t first_page =
        slot_base_[c.slot] / kBigPageSize + uint64_t{c.chunk} * kBigPagesPerBlock;
    const unsigned shift = first_page % kBigPagesPerBlock;
    const uint64_t pages = uint64_t{c.pages} << shift;
    out.push_back({first_page / kBigPagesPerBlock, static_cast<uint32_t>(pages)});
    if (pages >> 32) out.push_back({first_page / kBigPagesPerBlock + 1, uint32_t(pages >> 32)});
  }
  return out;
}

std::vector<uint64_t> Books::live_pages(const Plan& plan, uint64_t first, uint64_t count) const {
  std::vector<uint64_t> out;
  out.reserve(count);
  for (uint64_t i = first; i < first + count; ++i) {
    const Touch& t = plan.touches[i];
    out.push_back(slot_base_[t.slot_type >> 2] / kBigPageSize + t.page);
  }
  return out;
}

void Books::arrive(const std::vector<host::ChunkPages>& chunks) {
  residency_.admit(chunks);
  for (const host::ChunkPages& c : chunks) {
    auto d = discarded_.find(c.chunk);
    if (d != discarded_.end() && !(d->second &= ~c.pages)) discarded_.erase(d);
    on_peer_.erase(c.chunk); // faults pull them back from the neighbour
    touched_.insert(c.chunk);
  }
}

void Books::forget(void* p, Bytes n) {
  const auto first = reinterpret_cast<uint64_t>(p) / kBigPageSize;
  const auto last = (reinterpret_cast<uint64_t>(p) + n - 1) / kBigPageSize;
  residency_.remove(first, last - first + 1);
  for (uint64_t c = first * kBigPageSize / kBlockSize; c <= last * kBigPageSize / kBlockSize; ++c)
    on_peer_.erase(c);
}

void Books::note_discarded(uint64_t address, Bytes n, bool dead) {
  for_pages(address, n, [&](uint64_t chunk, uint32_t bit) {
    if (dead) {
      discarded_[chunk] |= bit;
      return;
    }
    auto d = discarded_.find(chunk);
    if (d != discarded_.end() && !(d->second &= ~bit)) discarded_.erase(d);
  });
}

std::vector<std::pair<void*, Bytes>> Books::eviction_runs(uint64_t chunk, Bytes lo,
                                                          Bytes hi) const {
  std::vector<std::pair<void*, Bytes>> out;
  auto d = discarded_.find(chunk);
  const uint32_t pages = d == discarded_.end() ? ~0u : ~d->second;
  for (unsigned first = 0; first < kBigPagesPerBlock;) {
    if (!(pages >> first & 1)) {
      ++first;
      continue;
    }
    unsigned end = first;
    while (end < kBigPagesPerBlock && (pages >> end & 1)) ++end;
    const uint64_t base = chunk * kBlockSize;
    const uint64_t from = base + std::max<Bytes>(lo, first * kBigPageSize);
    const uint64_t to = base + std::min<Bytes>(hi, end * kBigPageSize);
    auto it = by_live_.upper_bound(from);
    if (it != by_live_.begin()) --it;
    for (; from < to && it != by_live_.end() && it->first < to; ++it) {
      const uint64_t a = std::max(from, it->first), b = std::min(to, it->first + it->second.size);
      if (a < b) out.push_back({reinterpret_cast<void*>(a), b - a});
    }
    first = end;
  }
  return out;
}

Bytes Books::free_bytes(unsigned gpu) const {
  if (gpu == 0) {
    const uint64_t room = residency_.available_chunks(), used = residency_.resident_chunks();
    return room > used ? (room - used) * kBlockSize : 0;
  }
  return gpu == 1 && peer_chunks_ > on_peer_.size() ? (peer_chunks_ - on_peer_.size()) * kBlockSize
                                                    : 0;
}

ProcessorId Books::holder(Addr address) const {
  ProcessorId at = kNoProcessor;
  for_each_live(address, 1, [&](void* p, Bytes) {
    const uint64_t chunk = reinterpret_cast<uint64_t>(p) / kBlockSize;
    if (touched_.count(chunk)) at = kHost;
    if (residency_.holds(chunk)) at = gpu_processor(0);
    if (on_peer_.count(chunk)) at = gpu_processor(1);
  });
  return at;
}

std::vector<Addr> Books::oldest_blocks(unsigned gpu, size_t n) const {
  std::vector<Addr> out;
  if (gpu != 0) return out;
  for (uint64_t chunk : residency_.oldest(n)) {
    const Addr a = to_trace(chunk * kBlockSize);
    if (a != kNoAddress) out.push_back(a);
  }
  return out;
}

} // namespace faultline::live
