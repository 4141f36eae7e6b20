// An allocation history as `faultline alloc run` reads it (a PyTorch memory snapshot as pickle
// or JSON, either zstd-compressed, the tracer's allocator history, a faultline trace), then
// replayed through every allocator model, their invariants checked after each event. A
// history the reader accepts must replay: a model's error on it (an invariant broken, a free it
// does not know) is a finding, not a refusal.
#include "fuzz_support.h"
#include "sim/alloc/replay.h"

#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file("snapshot.pickle");
  const std::string& path = file.write(fuzz::view(data, size));
  std::optional<faultline::alloc::History> history;
  fuzz::accept_errors([&] { history = faultline::alloc::read_history(path); });
  if (!history) return 0;
  // The models work per 2 MB chunk, and the checks walk every chunk after every event: a history
  // near the reader's limit (kMaxLiveBytes, half a million chunks) takes seconds under the
  // sanitizers because it asks for that much, so only histories below 64 GiB are replayed.
  if (history->recorded.peak_allocated > (uint64_t{64} << 30)) return 0;
  faultline::alloc::ReplayConfig config;
  config.check_invariants = true;
  for (const std::string& allocator : config.allocators)
    faultline::alloc::replay(*history, allocator, config);
  return 0;
}
