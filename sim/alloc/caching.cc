#include "sim/alloc/caching.h"

#include "sim/core/error.h"

#include <algorithm>
#include <string>
#include <vector>

namespace faultline::alloc {
namespace {

Bytes round_up(Bytes value, Bytes unit) {
  return (value + unit - 1) / unit * unit;
}

[[noreturn]] void broken(const std::string& what) {
  throw SimulationError("caching allocator invariant: " + what);
}

} // namespace

CachingAllocator::CachingAllocator(const Options& options, Driver& driver, bool expandable)
    : options_(options), driver_(driver), expandable_(expandable) {
  small_.small = true;
}

CachingAllocator::~CachingAllocator() {
  for (const auto& segment : segments_)
    for (Node* n = segment->first; n != nullptr;) {
      Node* next = n->next;
      delete n;
      n = next;
    }
}

Block CachingAllocator::malloc(Bytes size, uint64_t stream) {
  const Bytes rounded = round_request(size);
  Pool& pool = pool_for(rounded);
  Node* node = find_free(pool, stream, rounded);
  if (node == nullptr) node = allocate_new(pool, stream, rounded);
  if (node == nullptr) return {};
  if (should_split(pool, node, rounded)) split(pool, node, rounded);
  node->allocated = true;
  allocated_[node->address] = node;
  return {node->address, node->size};
}

void CachingAllocator::free(Addr address) {
  auto it = allocated_.find(address);
  if (it == allocated_.end())
    throw SimulationError("free of " + std::to_string(address) + ", which is not a live block");
  Node* node = it->second;
  allocated_.erase(it);
  node->allocated = false;
  Pool& pool = node->segment->small ? small_ : large_;
  insert(pool, merge_free(pool, node));
}

void CachingAllocator::empty_cache() {
  driver_.synchronize();
  ++cache_releases_;
  release_pool(small_);
  release_pool(large_);
}

std::vector<std::pair<std::string, uint64_t>> CachingAllocator::counters() const {
  return {{"segments_created", segments_created_},
          {"splits", splits_},
          {"cache_releases", cache_releases_}};
}

CachingAllocator::Node* CachingAllocator::find_free(Pool& pool, uint64_t stream, Bytes rounded) {
  Node key;
  key.stream = stream;
  key.size = rounded;
  auto it = pool.free.lower_bound(&key);
  if (it == pool.free.end() || (*it)->stream != stream) return nullptr;
  Node* node = *it;
  // max_split_size: small requests leave oversize blocks alone; oversize requests take an
  // oversize block only when little of it would be wasted.
  const Bytes limit = options_.max_split_size;
  if (rounded < limit && node->size >= limit) return nullptr;
  if (rounded >= limit && node->size >= rounded + kLargeBuffer) return nullptr;
  pool.free.erase(it);
  return node;
}

CachingAllocator::Node* CachingAllocator::allocate_new(Pool& pool, uint64_t stream, Bytes rounded) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt == 1) {
      if (options_.max_split_size == kNoLimit || expandable_) continue;
      if (!release_oversize(pool, stream, rounded)) continue;
    }
    if (attempt == 2) empty_cache();
    Node* node = expandable_ ? grow(pool, stream, rounded) : new_segment(pool, stream, rounded);
    if (node != nullptr) return node;
  }
  return nullptr;
}

CachingAllocator::Node* CachingAllocator::new_segment(Pool& pool, uint64_t stream, Bytes rounded) {
  Bytes size = round_up(rounded, kRoundLarge);
  if (pool.small)
    size = kSmallBuffer;
  else if (rounded < kMinLargeAlloc)
    size = kLargeBuffer;
  const Addr base = driver_.malloc(size);
  if (base == 0) return nullptr;
  ++segments_created_;
  auto segment = std::make_unique<Segment>();
  segment->base = base;
  segment->size = size;
  segment->small = pool.small;
  auto* node = new Node{base, size, stream, false, true, nullptr, nullptr, segment.get()};
  segment->first = node;
  segments_.insert(std::move(segment));
  return node;
}

// Expandable segments: the lowest unmapped range of this stream's segments that, with the free
// block just before it and whatever follows unallocated, has room; else a new segment.
CachingAllocator::Node* CachingAllocator::find_expandable(Pool& pool, uint64_t stream,
                                                          Bytes rounded) {
  auto room = [rounded](Node* n) {
    Bytes bytes = 0;
    for (; n != nullptr && !n->allocated && bytes < rounded; n = n->next) bytes += n->size;
    return bytes >= rounded;
  };
  Node key;
  key.stream = stream;
  for (auto it = pool.unmapped.lower_bound(&key);
       it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    Node* start = *it;
    if (start->prev != nullptr && !start->prev->allocated) start = start->prev;
    if (room(start)) return start;
  }
  const Bytes va = round_up(std::max(options_.segment_va, rounded), kRoundLarge * 10);
  auto segment = std::make_unique<Segment>();
  segment->base = driver_.reserve(va);
  segment->size = va;
  segment->small = pool.small;
  segment->page = pool.small ? options_.small_page : options_.large_page;
  segment->pages.assign(va / segment->page, 0);
  segment->size = segment->pages.size() * segment->page;
  ++segments_created_;
  auto* node =
      new Node{segment->base, segment->size, stream, false, false, nullptr, nullptr, segment.get()};
  segment->first = node;
  segments_.insert(std::move(segment));
  pool.unmapped.insert(node);
  return node;
}

CachingAllocator::Node* CachingAllocator::grow(Pool& pool, uint64_t stream, Bytes rounded) {
  Node* candidate = find_expandable(pool, stream, rounded);
  if (!candidate->mapped) {
    candidate = map_node(pool, candidate, std::min(candidate->size, rounded));
    if (candidate == nullptr) return nullptr;
  }
  while (candidate->size < rounded) {
    Node* next = candidate->next; // unmapped: free blocks next to each other are merged
    candidate = map_node(pool, next, std::min(rounded - candidate->size, next->size));
    if (candidate == nullptr) return nullptr;
  }
  remove(pool, candidate);
  return candidate;
}

// Maps the pages covering the first `bytes` of the unmapped `node` and merges them with free
// neighbours; returns the merged free block (in the pool), or nullptr when the driver is out of
// memory (pages mapped by this call are given back).
CachingAllocator::Node* CachingAllocator::map_node(Pool& pool, Node* node, Bytes bytes) {
  Segment& s = *node->segment;
  const size_t first = (node->address - s.base) / s.page;
  const size_t count = round_up(bytes, s.page) / s.page;
  for (size_t i = 0; i < count; ++i) {
    const Handle h = driver_.create(s.page);
    if (h == 0) {
      for (size_t j = 0; j < i; ++j) {
        driver_.unmap(s.base + (first + j) * s.page, s.page);
        driver_.release(s.pages[first + j], s.page);
        s.pages[first + j] = 0;
      }
      return nullptr;
    }
    driver_.map(s.base + (first + i) * s.page, s.page, h);
    s.pages[first + i] = h;
  }
  pool.unmapped.erase(node);
  if (count * s.page < node->size) pool.unmapped.insert(cut(node, count * s.page));
  node->mapped = true;
  node = merge_free(pool, node);
  insert(pool, node);
  return node;
}

bool CachingAllocator::should_split(const Pool& pool, const Node* node, Bytes rounded) const {
  const Bytes remaining = node->size - rounded;
  if (pool.small || expandable_) return remaining >= 512;
  return rounded < options_.max_split_size && remaining > kSmallSize;
}

void CachingAllocator::split(Pool& pool, Node* node, Bytes rounded) {
  ++splits_;
  insert(pool, cut(node, rounded));
}

// Splits `node` at `at` bytes; returns the new node holding the rest (same state, not pooled).
CachingAllocator::Node* CachingAllocator::cut(Node* node, Bytes at) {
  auto* rest = new Node{node->address + at, node->size - at, node->stream,
                        node->allocated,    node->mapped,    node,
                        node->next,         node->segment};
  if (node->next != nullptr) node->next->prev = rest;
  node->next = rest;
  node->size = at;
  return rest;
}

// Merges a free block (not in any pool set) with its free neighbours of the same mapping state.
CachingAllocator::Node* CachingAllocator::merge_free(Pool& pool, Node* node) {
  auto mergeable = [node](Node* n) {
    return n != nullptr && !n->allocated && n->mapped == node->mapped;
  };
  if (mergeable(node->next)) absorb(pool, node, node->next);
  if (mergeable(node->prev)) {
    Node* prev = node->prev;
    remove(pool, prev);
    absorb(pool, prev, node);
    node = prev;
  }
  return node;
}

// `from` is next to `into`; it leaves its pool set and its range joins `into`.
void CachingAllocator::absorb(Pool& pool, Node* into, Node* from) {
  if (from == into->next) {
    remove(pool, from);
    into->size += from->size;
    into->next = from->next;
    if (from->next != nullptr) from->next->prev = into;
  } else {
    into->address = from->address;
    into->size += from->size;
    into->prev = from->prev;
    if (from->prev != nullptr) from->prev->next = into;
    if (into->segment->first == from) into->segment->first = into;
  }
  delete from;
}

void CachingAllocator::insert(Pool& pool, Node* node) {
  if (node->mapped)
    pool.free.insert(node);
  else
    pool.unmapped.insert(node);
}

void CachingAllocator::remove(Pool& pool, Node* node) {
  if (node->mapped)
    pool.free.erase(node);
  else
    pool.unmapped.erase(node);
}

// PyTorch's release_available_cached_blocks, over the request's pool and stream: gives back the
// smallest cached oversize segment of at least max(request, max_split_size), or else oversize
// segments from the largest down until that much is back. False when not enough came back
// (PyTorch then skips the retry and releases the whole cache).
bool CachingAllocator::release_oversize(Pool& pool, uint64_t stream, Bytes rounded) {
  const Bytes target = std::max(rounded, options_.max_split_size);
  std::vector<Node*> oversize; // ascending size: pool.free is ordered by (stream, size, address)
  for (Node* n : pool.free)
    if (n->stream == stream && n->size >= options_.max_split_size && n->prev == nullptr &&
        n->next == nullptr)
      oversize.push_back(n);
  for (Node* n : oversize)
    if (n->size >= target) {
      release_segment(pool, n);
      return true;
    }
  Bytes freed = 0;
  for (auto it = oversize.rbegin(); it != oversize.rend() && freed < target; ++it) {
    freed += (*it)->size;
    release_segment(pool, *it);
  }
  return freed >= target;
}

void CachingAllocator::release_pool(Pool& pool) {
  std::vector<Node*> free(pool.free.begin(), pool.free.end());
  for (Node* n : free) {
    if (expandable_)
      unmap_pages(pool, n);
    else if (n->prev == nullptr && n->next == nullptr)
      release_segment(pool, n);
  }
  if (!expandable_) return;
  std::vector<Node*> empty;
  for (Node* n : pool.unmapped)
    if (n->prev == nullptr && n->next == nullptr) empty.push_back(n);
  for (Node* n : empty) {
    pool.unmapped.erase(n);
    driver_.unreserve(n->segment->base, n->segment->size);
    erase_segment(n->segment);
  }
}

void CachingAllocator::release_segment(Pool& pool, Node* node) {
  pool.free.erase(node);
  driver_.free(node->segment->base, node->segment->size);
  erase_segment(node->segment);
}

void CachingAllocator::erase_segment(Segment* segment) {
  for (Node* n = segment->first; n != nullptr;) {
    Node* next = n->next;
    delete n;
    n = next;
  }
  for (auto it = segments_.begin(); it != segments_.end(); ++it)
    if (it->get() == segment) {
      segments_.erase(it);
      return;
    }
}

// Expandable segments on release: the pages wholly inside a free block are unmapped and given
// back; the block keeps its mapped head and tail.
void CachingAllocator::unmap_pages(Pool& pool, Node* node) {
  Segment& s = *node->segment;
  const Addr begin = s.base + round_up(node->address - s.base, s.page);
  const Addr end = s.base + (node->address + node->size - s.base) / s.page * s.page;
  if (begin >= end) return;
  for (Addr a = begin; a < end; a += s.page) {
    const size_t i = (a - s.base) / s.page;
    driver_.unmap(a, s.page);
    driver_.release(s.pages[i], s.page);
    s.pages[i] = 0;
  }
  pool.free.erase(node);
  Node* middle = node;
  if (begin > node->address) {
    middle = cut(node, begin - node->address);
    pool.free.insert(node);
  }
  if (end < middle->address + middle->size) pool.free.insert(cut(middle, end - middle->address));
  middle->mapped = false;
  insert(pool, merge_free(pool, middle));
}

void CachingAllocator::check_with(Bytes elsewhere) const {
  size_t free_nodes = 0, unmapped_nodes = 0, live = 0;
  Bytes reserved = 0;
  for (const auto& segment : segments_) {
    const Pool& pool = segment->small ? small_ : large_;
    check_segment(*segment, pool);
    for (const Node* n = segment->first; n != nullptr; n = n->next) {
      free_nodes += !n->allocated && n->mapped;
      unmapped_nodes += !n->mapped;
      live += n->allocated;
    }
    if (!expandable_) reserved += segment->size;
    for (Handle h : segment->pages) reserved += h != 0 ? segment->page : 0;
  }
  if (free_nodes != small_.free.size() + large_.free.size())
    broken("the free pools do not hold exactly the free blocks");
  if (unmapped_nodes != small_.unmapped.size() + large_.unmapped.size())
    broken("the unmapped sets do not hold exactly the unmapped ranges");
  if (live != allocated_.size()) broken("the live-block index does not match the segments");
  if (reserved + elsewhere != driver_.physical_bytes())
    broken("reserved bytes " + std::to_string(reserved) + " differ from the driver's " +
           std::to_string(driver_.physical_bytes() - elsewhere));
}

void CachingAllocator::check_segment(const Segment& s, const Pool& pool) const {
  Addr at = s.base;
  for (const Node* n = s.first; n != nullptr; n = n->next) {
    if (n->address != at) broken("blocks of a segment do not tile it");
    if (n->next != nullptr && n->next->prev != n) broken("broken block links");
    if (n->next != nullptr && !n->allocated && !n->next->allocated && n->mapped == n->next->mapped)
      broken("two free neighbours were not merged");
    if (n->allocated && allocated_.count(n->address) == 0) broken("a live block is not indexed");
    if (!n->allocated && n->mapped && pool.free.count(const_cast<Node*>(n)) == 0)
      broken("a free block is missing from its pool");
    if (!n->mapped && pool.unmapped.count(const_cast<Node*>(n)) == 0)
      broken("an unmapped range is missing from its set");
    for (Addr a = n->address; expandable_ && a < n->address + n->size; a += s.page)
      if ((s.pages[(a - s.base) / s.page] != 0) != n->mapped)
        broken("a page's mapping disagrees with its block");
    at += n->size;
  }
  if (at != s.base + s.size) broken("blocks of a segment do not cover it");
}

} // namespace faultline::alloc
