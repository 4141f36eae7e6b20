#include "sim/alloc/gmlake.h"

#include "sim/core/error.h"

#include <algorithm>
#include <string>

namespace faultline::alloc {
namespace {

constexpr Bytes kSmallSize = 1 * kMiB;
constexpr Bytes kMinLargeAlloc = 10 * kMiB;
constexpr size_t kLargeBufferChunks = 10; // 20 MiB: PyTorch's segment for requests below 10 MiB

[[noreturn]] void broken(const std::string& what) {
  throw SimulationError("GMLake allocator invariant: " + what);
}

} // namespace

GMLakeAllocator::GMLakeAllocator(const Options& options, Driver& driver)
    : options_(options), driver_(driver), small_(options, driver, false) {}

Block GMLakeAllocator::malloc(Bytes size, uint64_t stream) {
  const Bytes rounded = round_request(size);
  if (rounded <= kSmallSize) return small_.malloc(size, stream);
  const size_t chunks = (rounded + kChunk - 1) / kChunk;
  for (unsigned attempt = 0; attempt < 3; ++attempt) {
    if (attempt == 2) empty_cache();
    Block b = serve(chunks, stream, attempt);
    if (b.address != 0) return b;
  }
  return {};
}

// GMLake's malloc: get_free_block || stitch(0) || realloc_block || (release_available_cached_blocks
// && realloc_block) || stitch(1) || (release_cached_blocks && realloc_block) || stitch(2), where
// stitch(time) runs when defragLevel <= time. Attempt 0: the pools, stitch(0), a new segment.
// Attempt 1: stitch(1) only (this model applies no max_split_size to chunks, so
// release_available_cached_blocks has nothing to free). Attempt 2, after empty_cache: a new
// segment, then stitch(2).
Block GMLakeAllocator::serve(size_t chunks, uint64_t stream, unsigned attempt) {
  const bool may_stitch =
      options_.defrag_level <= attempt && chunks * kChunk >= options_.frag_limit;
  Block b;
  if (attempt == 0) b = from_primitive(chunks, stream);
  if (b.address == 0 && attempt == 0) b = from_stitched_pool(chunks, stream);
  if (b.address == 0 && may_stitch && attempt < 2) b = stitch(chunks, stream);
  if (attempt == 1) return b;
  if (b.address == 0 && may_stitch && options_.realloc_missing) b = stitch_with_new(chunks, stream);
  if (b.address == 0) b = from_new_segment(chunks, stream);
  if (b.address == 0 && may_stitch && attempt == 2) b = stitch(chunks, stream);
  return b;
}

// reAlloc: a segment of only the chunks that free runs lack, then a stitch over all of them.
Block GMLakeAllocator::stitch_with_new(size_t chunks, uint64_t stream) {
  size_t free = 0;
  for (const auto& [s, length, segment, first] : runs_) free += s == stream ? length : 0;
  if (free == 0 || free >= chunks || create_segment(chunks - free, stream) == 0) return {};
  return stitch(chunks, stream);
}

Block GMLakeAllocator::from_primitive(size_t chunks, uint64_t stream) {
  auto it = runs_.lower_bound({stream, chunks, 0, 0});
  if (it == runs_.end() || std::get<0>(*it) != stream) return {};
  const auto [s, length, segment, first] = *it;
  const Addr address = segments_.at(segment).base + first * kChunk;
  take({segment, first}, chunks, address);
  Live& live = live_[address];
  for (size_t i = 0; i < chunks; ++i) live.chunks.push_back({segment, first + i});
  return {address, chunks * kChunk};
}

bool GMLakeAllocator::reusable(const Stitched& s) const {
  if (s.live) return false;
  for (const ChunkRef& c : s.chunks)
    if (segments_.at(c.segment).chunks[c.index].user != 0) return false;
  return true;
}

Block GMLakeAllocator::from_stitched_pool(size_t chunks, uint64_t stream) {
  uint64_t best = 0;
  size_t best_size = 0;
  for (const auto& [id, s] : stitched_) {
    const size_t n = s.chunks.size();
    if (s.stream != stream || n < chunks || n > chunks * options_.reuse_limit) continue;
    if ((best == 0 || n < best_size) && reusable(s)) {
      best = id;
      best_size = n;
    }
  }
  if (best == 0) return {};
  Stitched& s = stitched_.at(best);
  s.live = true;
  Live& live = live_[s.base];
  live.stitched = best;
  for (size_t i = 0; i < chunks; ++i) {
    take(s.chunks[i], 1, s.base);
    live.chunks.push_back(s.chunks[i]);
  }
  ++stitch_reuses_;
  return {s.base, chunks * kChunk};
}

// Greedy, as GMLake does: the stream's free runs from the largest down until they cover the
// request; the last one contributes only what is still missing.
Block GMLakeAllocator::stitch(size_t chunks, uint64_t stream) {
  std::vector<Run> picked;
  size_t total = 0;
  for (auto it = runs_.rbegin(); it != runs_.rend() && total < chunks; ++it)
    if (std::get<0>(*it) == stream) {
      picked.push_back(*it);
      total += std::get<1>(*it);
    }
  if (total < chunks) return {};
  const Addr base = driver_.reserve(chunks * kChunk);
  const uint64_t id = next_id_++;
  Stitched& s = stitched_[id];
  s.base = base;
  s.stream = stream;
  s.live = true;
  for (const auto& [st, length, segment, first] : picked)
    for (size_t i = 0; i < length && s.chunks.size() < chunks; ++i)
      s.chunks.push_back({segment, first + i});
  Live& live = live_[base];
  live.stitched = id;
  live.chunks = s.chunks;
  for (size_t i = 0; i < s.chunks.size(); ++i) {
    take(s.chunks[i], 1, base);
    Chunk& c = at(s.chunks[i]);
    driver_.map(base + i * kChunk, kChunk, c.handle);
    c.stitched.insert(id);
  }
  ++stitches_;
  if (cached_stitched_bytes() > options_.auto_gc) collect_garbage(false);
  return {base, chunks * kChunk};
}

Block GMLakeAllocator::from_new_segment(size_t chunks, uint64_t stream) {
  const size_t size = chunks * kChunk < kMinLargeAlloc ? kLargeBufferChunks : chunks;
  if (create_segment(size, stream) == 0) return {};
  return from_primitive(chunks, stream);
}

// A primitive segment: a VA range mapping `chunks` new physical chunks. 0 when the driver has no
// memory left for all of them (those made are given back).
uint64_t GMLakeAllocator::create_segment(size_t chunks, uint64_t stream) {
  const Addr base = driver_.reserve(chunks * kChunk);
  Segment segment;
  segment.base = base;
  segment.stream = stream;
  for (size_t i = 0; i < chunks; ++i) {
    const Handle h = driver_.create(kChunk);
    if (h == 0) {
      for (size_t j = 0; j < i; ++j) {
        driver_.unmap(base + j * kChunk, kChunk);
        driver_.release(segment.chunks[j].handle, kChunk);
      }
      driver_.unreserve(base, chunks * kChunk);
      return 0;
    }
    driver_.map(base + i * kChunk, kChunk, h);
    segment.chunks.push_back({h, 0, {}});
  }
  const uint64_t id = next_id_++;
  segment.free_runs[0] = chunks;
  runs_.insert({stream, chunks, id, 0});
  segments_.emplace(id, std::move(segment));
  ++segments_created_;
  return id;
}

// Marks `count` chunks from `first` used by `user`; they lie inside one free run, which splits.
void GMLakeAllocator::take(ChunkRef first, size_t count, Addr user) {
  Segment& seg = segments_.at(first.segment);
  auto run = seg.free_runs.upper_bound(first.index);
  if (run == seg.free_runs.begin()) broken("taking chunks that are not free");
  --run;
  const auto [start, length] = *run;
  if (first.index + count > start + length) broken("taking chunks beyond a free run");
  runs_.erase({seg.stream, length, first.segment, start});
  seg.free_runs.erase(run);
  if (first.index > start) {
    seg.free_runs[start] = first.index - start;
    runs_.insert({seg.stream, first.index - start, first.segment, start});
  }
  const size_t end = first.index + count;
  if (end < start + length) {
    seg.free_runs[end] = start + length - end;
    runs_.insert({seg.stream, start + length - end, first.segment, end});
  }
  for (size_t i = first.index; i < end; ++i) seg.chunks[i].user = user;
}

// Frees one chunk and merges it with the free runs on either side.
void GMLakeAllocator::give(ChunkRef chunk) {
  Segment& seg = segments_.at(chunk.segment);
  seg.chunks[chunk.index].user = 0;
  size_t start = chunk.index, length = 1;
  auto next = seg.free_runs.find(chunk.index + 1);
  if (next != seg.free_runs.end()) {
    length += next->second;
    runs_.erase({seg.stream, next->second, chunk.segment, next->first});
    seg.free_runs.erase(next);
  }
  auto prev = seg.free_runs.lower_bound(chunk.index);
  if (prev != seg.free_runs.begin()) {
    --prev;
    if (prev->first + prev->second == chunk.index) {
      start = prev->first;
      length += prev->second;
      runs_.erase({seg.stream, prev->second, chunk.segment, prev->first});
      seg.free_runs.erase(prev);
    }
  }
  seg.free_runs[start] = length;
  runs_.insert({seg.stream, length, chunk.segment, start});
}

void GMLakeAllocator::free(Addr address) {
  auto it = live_.find(address);
  if (it == live_.end()) {
    small_.free(address); // throws for an address that is nobody's block
    return;
  }
  for (const ChunkRef& c : it->second.chunks) give(c);
  if (it->second.stitched != 0) {
    Stitched& s = stitched_.at(it->second.stitched);
    s.live = false;
    s.last_use = ++tick_;
  }
  live_.erase(it);
}

Bytes GMLakeAllocator::cached_stitched_bytes() const {
  Bytes bytes = 0;
  for (const auto& [id, s] : stitched_)
    if (!s.live) bytes += s.chunks.size() * kChunk;
  return bytes;
}

// Drops cached stitched blocks: those that cannot be reused now first, then least recently
// used, until under auto_gc (or all of them).
void GMLakeAllocator::collect_garbage(bool everything) {
  ++garbage_collections_;
  std::vector<std::tuple<bool, uint64_t, uint64_t>> order; // reusable, last use, id
  for (const auto& [id, s] : stitched_)
    if (!s.live) order.emplace_back(reusable(s), s.last_use, id);
  std::sort(order.begin(), order.end());
  for (const auto& [r, used, id] : order) {
    if (!everything && cached_stitched_bytes() <= options_.auto_gc) break;
    drop_stitched(id);
  }
}

void GMLakeAllocator::drop_stitched(uint64_t id) {
  Stitched& s = stitched_.at(id);
  for (size_t i = 0; i < s.chunks.size(); ++i) {
    driver_.unmap(s.base + i * kChunk, kChunk);
    at(s.chunks[i]).stitched.erase(id);
  }
  driver_.unreserve(s.base, s.chunks.size() * kChunk);
  stitched_.erase(id);
  ++stitched_dropped_;
}

void GMLakeAllocator::empty_cache() {
  small_.empty_cache();
  collect_garbage(true);
  release_free_segments();
}

// Gives back every primitive segment whose chunks are all free and mapped by no live stitched
// block (cached stitched blocks were dropped before).
void GMLakeAllocator::release_free_segments() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment& seg = it->second;
    const size_t n = seg.chunks.size();
    bool idle = seg.free_runs.size() == 1 && seg.free_runs.begin()->second == n;
    for (const Chunk& c : seg.chunks) idle = idle && c.stitched.empty();
    if (!idle) {
      ++it;
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      driver_.unmap(seg.base + i * kChunk, kChunk);
      driver_.release(seg.chunks[i].handle, kChunk);
    }
    driver_.unreserve(seg.base, n * kChunk);
    runs_.erase({seg.stream, n, it->first, 0});
    it = segments_.erase(it);
    ++segments_released_;
  }
}

std::vector<std::pair<std::string, uint64_t>> GMLakeAllocator::counters() const {
  auto out = small_.counters();
  for (auto& [name, value] : out) name = "small_pool_" + name;
  out.insert(out.end(), {{"segments_created", segments_created_},
                         {"segments_released", segments_released_},
                         {"stitches", stitches_},
                         {"stitch_reuses", stitch_reuses_},
                         {"garbage_collections", garbage_collections_},
                         {"stitched_dropped", stitched_dropped_}});
  return out;
}

void GMLakeAllocator::check() const {
  size_t chunks = 0, runs = 0, used = 0;
  for (const auto& [id, seg] : segments_) {
    chunks += seg.chunks.size();
    runs += seg.free_runs.size();
    size_t expect_free_from = 0;
    for (const auto& [start, length] : seg.free_runs) {
      if (start < expect_free_from) broken("free runs overlap or touch without merging");
      for (size_t i = start; i < start + length; ++i)
        if (seg.chunks[i].user != 0) broken("a used chunk lies in a free run");
      if (runs_.count({seg.stream, length, id, start}) == 0) broken("a free run is not indexed");
      expect_free_from = start + length + 1;
    }
    for (const Chunk& c : seg.chunks) {
      if (c.user == 0) continue;
      if (live_.count(c.user) == 0) broken("a chunk is used by a block that is not live");
      ++used;
    }
  }
  if (runs != runs_.size()) broken("the free-run index holds runs no segment has");
  // Every chunk a live block lists is used by it, and none is listed twice; as many are listed
  // as are used, so every used chunk is listed by its user. Linear in the chunks: a block of
  // 1 TiB lists half a million.
  std::map<uint64_t, std::vector<bool>> listed;
  size_t listings = 0;
  for (const auto& [address, live] : live_)
    for (const ChunkRef& c : live.chunks) {
      const Segment& seg = segments_.at(c.segment);
      if (seg.chunks[c.index].user != address)
        broken("a live block's chunk is used by another block");
      std::vector<bool>& marks = listed[c.segment];
      marks.resize(seg.chunks.size());
      if (marks[c.index]) broken("a live block lists a chunk twice");
      marks[c.index] = true;
      ++listings;
    }
  if (listings != used) broken("a chunk's user does not list it");
  small_.check_with(chunks * kChunk);
}

} // namespace faultline::alloc
