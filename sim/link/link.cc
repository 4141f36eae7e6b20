#include "sim/link/link.h"

#include <algorithm>

namespace faultline {

Transfer LinkDirection::transfer(Time ready, Bytes bytes, const char* cause) {
  Transfer t;
  t.start = std::max(ready, busy_until_);
  t.end = t.start + curve_.transfer_ns(bytes);
  busy_until_ = t.end;
  bytes_ += bytes;
  if (observer_) observer_->on_transfer(name_, bytes, t, cause);
  return t;
}

} // namespace faultline
