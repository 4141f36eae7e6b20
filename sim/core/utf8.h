// UTF-8 validation, for text that a file hands over and a JSON document later carries (kernel
// names, pickled strings): nlohmann::json refuses to write invalid UTF-8, so readers check it.
#pragma once

#include <cstddef>
#include <string_view>

namespace faultline {

// Returns s.size() when `s` is valid UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), else the offset of the first byte of the first invalid sequence.
size_t utf8_error_offset(std::string_view s);

inline bool valid_utf8(std::string_view s) {
  return utf8_error_offset(s) == s.size();
}

} // namespace faultline
