#include "sim/core/values.h"

#include "sim/core/error.h"

#include <cctype>
#include <limits>
#include <map>

namespace faultline {

uint64_t parse_number(const std::string& text, const std::string& what) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw UsageError(what + ": expected a number, got \"" + text + "\"");
  const std::string unit = text.substr(used);
  const std::map<std::string, uint64_t> units = {{"", 1},
                                                 {"K", 1ull << 10},
                                                 {"KiB", 1ull << 10},
                                                 {"M", 1ull << 20},
                                                 {"MiB", 1ull << 20},
                                                 {"G", 1ull << 30},
                                                 {"GiB", 1ull << 30}};
  auto it = units.find(unit);
  if (it == units.end()) throw UsageError(what + ": unknown unit \"" + unit + "\" (use K, M or G)");
  if (v > std::numeric_limits<uint64_t>::max() / it->second)
    throw UsageError(what + ": " + text + " is too large");
  return v * it->second;
}

uint64_t parse_iterations(const std::string& text) {
  if (text.empty()) return 0;
  const uint64_t n = parse_number(text, "--iterations");
  if (n == 0) throw UsageError("--iterations 0: expected 1 or more training steps");
  if (n > 1'000'000) // the run config's bound: one that catches a typo, not a model limit
    throw UsageError("--iterations " + text + ": expected at most 1000000 training steps");
  return n;
}

} // namespace faultline
