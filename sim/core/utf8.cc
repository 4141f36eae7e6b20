#include "sim/core/utf8.h"

#include <cstdint>

namespace faultline {

size_t utf8_error_offset(std::string_view s) {
  static constexpr uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000}; // below: overlong
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cp = c;
    if (c >= 0x80) {
      if ((c & 0xe0) == 0xc0)
        n = 1, cp = c & 0x1f;
      else if ((c & 0xf0) == 0xe0)
        n = 2, cp = c & 0x0f;
      else if ((c & 0xf8) == 0xf0)
        n = 3, cp = c & 0x07;
      else
        return i;
      if (i + n >= s.size()) return i;
      for (size_t k = 1; k <= n; ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xc0) != 0x80) return i;
        cp = cp << 6 | (b & 0x3f);
      }
      if (cp < kSmallest[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    }
    i += n + 1;
  }
  return s.size();
}

} // namespace faultline
