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
  account(t.start, t.end);
  if (observer_) observer_->on_transfer(name_, bytes, t, cause);
  return t;
}

void Route::pair(Route& a, Route& b) {
  a.reverse_ = &b;
  b.reverse_ = &a;
}

void Route::account(Time start, Time end) {
  start = std::max(start, last_end_); // a route's own transfers never overlap; guard anyway
  if (end <= start) return;
  busy_ns_ += end - start;
  last_end_ = end;
  if (!reverse_) return;
  // The reverse route's transfers that ended by `start` can overlap none of ours to come.
  std::deque<Interval>& theirs = reverse_->recent_;
  while (!theirs.empty() && theirs.front().end <= start) theirs.pop_front();
  for (const Interval& i : theirs) {
    if (i.start >= end) break;
    overlap_ns_ += std::min(end, i.end) - std::max(start, i.start);
  }
  // Ours that ended by the reverse route's last end can overlap none of its to come.
  while (!recent_.empty() && recent_.front().end <= reverse_->last_end_) recent_.pop_front();
  recent_.push_back({start, end});
}

} // namespace faultline
