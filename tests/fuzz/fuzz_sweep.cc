// A sweep file (configs/sweeps/) as `faultline sweep` reads it before running anything: the grid
// expanded and every point's run config and policy checked. Paths in it are relative to the
// working directory, which tests/fuzz/run.sh sets to the repository root.
#include "fuzz_support.h"
#include "sim/sweep/sweep.h"

namespace {

// Points the file asks for, as far as its lists say (0 where it is no sweep at all).
uint64_t grid_points(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return 0;
  uint64_t points = 1;
  for (const char* key : {"traces", "policies", "capacity_fractions"})
    if (doc.contains(key) && doc[key].is_array()) points *= std::max<size_t>(doc[key].size(), 1);
  if (doc.contains("vary") && doc["vary"].is_object())
    for (const auto& values : doc["vary"])
      if (values.is_array() && points <= faultline::sweep::kMaxPoints)
        points *= std::max<size_t>(values.size(), 1);
  return points;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Checking a point's config takes milliseconds under the sanitizers; a grid of thousands of
  // points is slow because it was asked for, not a hang. Grids past kMaxPoints must be refused
  // at once, so they stay in.
  const uint64_t points = grid_points(fuzz::view(data, size));
  if (points > 1000 && points <= faultline::sweep::kMaxPoints) return 0;
  static fuzz::InputFile file("sweep.json");
  const std::string& path = file.write(fuzz::view(data, size));
  fuzz::accept_errors([&] { faultline::sweep::load_sweep(path); });
  return 0;
}
