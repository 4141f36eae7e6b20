// A GPU memory allocator model: what PyTorch's caching allocator, its expandable segments and
// GMLake's virtual memory stitching do with the same requests. Models are selected by name
// (make_allocator) and run over a Driver: the simulator's (driver.h) or the live library's.
#pragma once

#include "sim/alloc/driver.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace faultline::alloc {

constexpr Bytes kMiB = 1024 * 1024;
constexpr Bytes kNoLimit = ~Bytes{0};

// Knobs of the three models, named after PyTorch's and GMLake's (in comments).
struct Options {
  Bytes max_split_size = kNoLimit; // PYTORCH_CUDA_ALLOC_CONF max_split_size_mb
  // expandable segments: physical page per pool, VA reserved per segment
  Bytes small_page = 2 * kMiB;
  Bytes large_page = 20 * kMiB;
  Bytes segment_va = Bytes{160} << 30; // 1 1/8 of the GPU's memory in PyTorch
  // GMLake
  Bytes frag_limit = 512 * kMiB;     // fragLimit: smallest request that stitches
  uint64_t reuse_limit = 10;         // reuseLimit: stitched block / request size at most
  unsigned defrag_level = 0;         // defragLevel: 0 stitch first, 1 only after a failure
  Bytes auto_gc = Bytes{1000} << 30; // autoGC: cached stitched bytes that trigger GC
  bool realloc_missing = false;      // reAlloc: create only the missing chunks, then stitch
};

// A block the allocator handed out: `size` is what it accounts (the request rounded up).
struct Block {
  Addr address = 0;
  Bytes size = 0;
};

// Contract: malloc returns a block of at least `size` bytes for use on `stream`, or a block with
// address 0 when the driver has no memory left even after the allocator released what it
// caches (PyTorch raises out-of-memory there). free takes the address of a live block. Live
// blocks never overlap in virtual memory, nor in physical memory. A block is reused only on the
// stream it was allocated for. empty_cache() gives back to the driver everything not in use.
// check() throws SimulationError naming the first broken internal invariant.
class Allocator {
public:
  virtual ~Allocator() = default;
  virtual Block malloc(Bytes size, uint64_t stream) = 0;
  virtual void free(Addr address) = 0;
  virtual void empty_cache() = 0;
  virtual void check() const = 0;
  // Model-specific counts (splits, stitches, garbage collections...), for results.
  virtual std::vector<std::pair<std::string, uint64_t>> counters() const { return {}; }
};

using AllocatorFactory = std::function<std::unique_ptr<Allocator>(const Options&, Driver&)>;

// Known models: "caching", "expandable", "gmlake". An unknown name throws ConfigError listing
// the known ones.
std::unique_ptr<Allocator> make_allocator(const std::string& name, const Options& options,
                                          Driver& driver);
std::vector<std::string> allocator_names();
// Throws the same ConfigError as make_allocator for a name that is not a model.
void require_allocator(const std::string& name);

// Bytes in use and their peaks, kept outside the models (the same for each): allocated is the
// blocks' accounted size, requested what the program asked for, reserved what the driver holds.
struct Usage {
  Bytes allocated = 0, requested = 0, reserved = 0;
  Bytes peak_allocated = 0, peak_requested = 0, peak_reserved = 0;
  uint64_t mallocs = 0, frees = 0, ooms = 0;

  void on_malloc(Bytes block, Bytes request, Bytes reserved_now);
  void on_free(Bytes block, Bytes request, Bytes reserved_now);
  void on_reserved(Bytes reserved_now);
  // GMLake's measure: 1 - peak allocated / peak reserved (0 when nothing was reserved).
  double fragmentation() const;
};

// PyTorch's request rounding: at least 512 bytes, in multiples of 512.
Bytes round_request(Bytes size);

} // namespace faultline::alloc
