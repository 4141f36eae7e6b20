#include "sim/host/residency.h"

#include "sim/core/error.h"

#include <algorithm>

namespace faultline::host {

std::vector<uint64_t> Residency::make_room(const std::vector<ChunkPages>& needed,
                                           const std::function<std::string()>& what,
                                           std::vector<uint32_t>* victim_pages) {
  std::vector<uint64_t> victims;
  host::budget::make_room(needed, *this, what, [&](uint64_t chunk) {
    victims.push_back(chunk);
    if (victim_pages) victim_pages->push_back(resident_pages(chunk));
    drop_chunk(chunk);
  });
  return victims;
}

void Residency::admit(const std::vector<ChunkPages>& pages) {
  for (const ChunkPages& c : pages) {
    auto [it, fresh] = masks_.try_emplace(c.chunk, 0u);
    it->second |= c.pages;
    if (fresh) where_[c.chunk] = order_.insert(order_.end(), c.chunk);
  }
  peak_ = std::max<uint64_t>(peak_, masks_.size());
}

void Residency::remove(uint64_t first_big_page, uint64_t count) {
  for (uint64_t p = first_big_page; p < first_big_page + count;) {
    const uint64_t chunk = p / kBigPagesPerBlock;
    const uint64_t end = std::min(first_big_page + count, (chunk + 1) * kBigPagesPerBlock);
    auto it = masks_.find(chunk);
    if (it != masks_.end()) {
      for (uint64_t q = p; q < end; ++q) it->second &= ~(1u << (q % kBigPagesPerBlock));
      if (it->second == 0) drop_chunk(chunk);
    }
    p = end;
  }
}

uint64_t Residency::available_chunks() const {
  return reserved_ >= static_cast<int64_t>(budget_) ? 0
                                                    : budget_ - static_cast<uint64_t>(reserved_);
}

bool Residency::resident(uint64_t big_page) const {
  auto it = masks_.find(big_page / kBigPagesPerBlock);
  return it != masks_.end() && (it->second >> (big_page % kBigPagesPerBlock) & 1u);
}

void Residency::drop_chunk(uint64_t chunk) {
  masks_.erase(chunk);
  auto it = where_.find(chunk);
  if (it == where_.end()) return;
  order_.erase(it->second);
  where_.erase(it);
}

} // namespace faultline::host
