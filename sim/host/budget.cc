#include "sim/host/budget.h"

#include "sim/core/error.h"

#include <unordered_map>
#include <unordered_set>

namespace faultline::host {

std::vector<ChunkPages> group_by_chunk(const std::vector<uint64_t>& big_pages) {
  std::vector<ChunkPages> out;
  std::unordered_map<uint64_t, size_t> at;
  for (uint64_t p : big_pages) {
    const uint64_t chunk = p / kBigPagesPerBlock;
    auto [it, fresh] = at.try_emplace(chunk, out.size());
    if (fresh) out.push_back({chunk, 0});
    out[it->second].pages |= 1u << (p % kBigPagesPerBlock);
  }
  return out;
}

namespace budget {

void make_room(const std::vector<ChunkPages>& needed, const ChunkBooks& books,
               const std::function<std::string()>& what,
               const std::function<void(uint64_t)>& evict) {
  // The common case, checked before any set is made: every needed chunk could be new, and still
  // there is room (a program's launches come through here one by one).
  if (books.resident_chunks() + needed.size() <= books.room_chunks()) return;
  std::unordered_set<uint64_t> chunks;
  uint64_t fresh = 0; // needed chunks that take no GPU memory yet
  for (const ChunkPages& c : needed)
    if (chunks.insert(c.chunk).second && !books.holds(c.chunk)) ++fresh;
  const uint64_t room = books.room_chunks();
  if (chunks.size() > room) {
    throw SimulationError(what() + " needs " + std::to_string(chunks.size()) +
                          " chunks of 2 MB at once, more than the budget leaves (" +
                          std::to_string(room) + " chunks)");
  }
  books.for_each_victim([&](uint64_t chunk) {
    if (books.resident_chunks() + fresh <= room) return false;
    if (!chunks.count(chunk)) evict(chunk);
    return true;
  });
}

std::vector<size_t> parts(const std::vector<uint64_t>& chunk_of_touch, uint64_t room,
                          const std::function<std::string()>& what) {
  if (room == 0)
    throw SimulationError(what() + " has no room at all: the budget is taken by device memory");
  std::vector<size_t> starts{0};
  std::unordered_set<uint64_t> in_part;
  for (size_t i = 0; i < chunk_of_touch.size(); ++i) {
    if (chunk_of_touch[i] == kNoChunk || in_part.count(chunk_of_touch[i])) continue;
    if (in_part.size() == room) {
      starts.push_back(i);
      in_part.clear();
    }
    in_part.insert(chunk_of_touch[i]);
  }
  return starts;
}

Time part_duration(Time duration, size_t first, size_t end, size_t count) {
  if (count == 0) return duration;
  const auto at = [&](size_t i) {
    return i == count ? duration
                      : static_cast<Time>(static_cast<double>(duration) * static_cast<double>(i) /
                                          static_cast<double>(count));
  };
  return at(end) - at(first);
}

std::vector<ChunkPages> absent(const std::vector<ChunkPages>& touched, const ChunkBooks& books) {
  std::vector<ChunkPages> out;
  for (const ChunkPages& c : touched)
    if (const uint32_t pages = c.pages & ~books.resident_pages(c.chunk))
      out.push_back({c.chunk, pages});
  return out;
}

} // namespace budget
} // namespace faultline::host
