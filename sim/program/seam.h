// The seam between the injection library's run mode (tracer/inject/run.cc, CUDA) and the policy
// host inside the program (libfaultline_program.so, sim/program/module.cc, plain C++ tested in
// CI with a fake device). The injection library loads the module at the program's first CUDA
// call, hands it a Device, and reports the program's calls through Hooks.
//
// Contract:
//  - Hooks are called one at a time, under the injection library's lock, in the program's call
//    order; a call that returns false has failed, and error() says why (the library then stops
//    the program).
//  - Device calls are asynchronous and run in the order issued, on a migration stream of the
//    library's own; the program's streams wait for them only where order_before() says so.
//  - Plain types only cross this boundary.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faultline::program {

// What the injection library does on the GPU for the policy host. Addresses are the program's.
class Device {
public:
  virtual ~Device() = default;
  virtual void prefetch_to_gpu(uint64_t address, uint64_t bytes) = 0;
  virtual void evict_to_host(uint64_t address, uint64_t bytes) = 0;
  virtual void discard(uint64_t address, uint64_t bytes) = 0;
  virtual void advise_remote(uint64_t address, uint64_t bytes, bool on) = 0;
  // The program's stream `stream` (0: the legacy default stream) waits, on the GPU, for every
  // migration issued so far; the CPU does not wait.
  virtual void order_before(uint64_t stream) = 0;
  // The migrations issued from now on wait, on the GPU, for every kernel launched so far.
  virtual void order_after_launched() = 0;
  // Waits for the GPU's work, the program's and the migrations.
  virtual void synchronize() = 0;
  // The GPU time the migrations took: for each run of them (those a hook issued with no ordering
  // call between), from the first starting on the GPU to the last done, summed. Only runs done
  // when asked count (the GPU runs behind the CPU); after synchronize() all of them do.
  virtual uint64_t migration_gpu_ns() = 0;
  // GPU memory in use now, every process's (cuMemGetInfo): with the GPU idle, the managed pages
  // resident on it are in this count.
  virtual uint64_t used_bytes() = 0;
  virtual uint64_t total_bytes() = 0; // the GPU's memory
  // Why the last call failed ("" if none failed).
  virtual const char* error() = 0;
};

// What the program does, as the injection library reports it.
class Hooks {
public:
  virtual ~Hooks() = default;
  // An allocation the program made (managed, or device memory that never migrates).
  virtual bool alloc(uint64_t address, uint64_t bytes, bool managed) = 0;
  virtual bool free(uint64_t address) = 0;
  // A kernel launch, before it reaches the driver: its name, and its argument words that point
  // into live allocations; `stream` is the launch's.
  virtual bool launch(const char* name, const uint64_t* words, size_t count, uint64_t stream) = 0;
  // The first `count` kernels launched have finished (the library polls events it recorded
  // after each launch; kernels finish in launch order as far as the policy is told).
  virtual bool kernels_done(uint64_t count) = 0;
  // The program waited for the GPU (a device or stream synchronisation returned).
  virtual bool synced() = 0;
  // A training step ended (the PyTorch hook marks each optimizer step).
  virtual bool step() = 0;
  // cudaProfilerStart (true) or Stop (false).
  virtual bool range(bool on) = 0;
  // The program is exiting: the result is written where the run's config says. `library_ns`: the
  // CPU time the injection library spent in its callbacks inside the program's CUDA calls, these
  // hooks included (what `faultline run` adds to the program's CPU, less CUPTI's own dispatch).
  virtual bool finish(uint64_t library_ns) = 0;
  virtual const char* error() = 0;
};

// The entry point libfaultline_program.so exports: the hooks for a run whose config (JSON, see
// sim/program/config.h) is at `config_path`, over `device`; null with `message` filled on
// failure.
using OpenFunction = Hooks* (*)(Device* device, const char* config_path, char* message,
                                size_t message_size);
constexpr const char* kOpenSymbol = "faultline_program_open";

} // namespace faultline::program
