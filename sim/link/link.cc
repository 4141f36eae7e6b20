#include "sim/link/link.h"

#include <algorithm>

namespace faultline {

LinkDirection::LinkDirection(std::string name, config::LinkCurve curve, unsigned lanes)
    : name_(std::move(name)), curve_(std::move(curve)) {
  for (auto& point : curve_.points) point.second *= lanes;
}

Transfer LinkDirection::transfer(Time ready, Bytes bytes, const char* cause) {
  Transfer t;
  t.start = std::max(ready, busy_until_);
  t.end = t.start + time_ns(bytes);
  occupy(t.end, bytes);
  if (observer_) observer_->on_transfer(name_, bytes, t, cause);
  return t;
}

void LinkDirection::occupy(Time end, Bytes bytes) {
  busy_until_ = std::max(busy_until_, end);
  bytes_ += bytes;
}

Transfer Route::transfer(Time ready, Bytes bytes, const char* cause) {
  Transfer t{ready, ready};
  Time duration = 0;
  for (const LinkDirection* hop : hops_) {
    t.start = std::max(t.start, hop->busy_until());
    duration = std::max(duration, hop->time_ns(bytes));
  }
  t.end = t.start + duration;
  for (LinkDirection* hop : hops_) hop->occupy(t.end, bytes);
  if (observer_) observer_->on_transfer(name_, bytes, t, cause);
  return t;
}

} // namespace faultline
