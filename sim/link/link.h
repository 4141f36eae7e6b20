// Links: one direction of a PCIe or NVLink connection queues its transfers in order, each taking
// overhead + size / bandwidth(size); the two directions of a link are independent (full duplex).
// A route strings link directions together from one processor to another.
#pragma once

#include "sim/config/run_config.h"

#include <deque>
#include <string>
#include <vector>

namespace faultline {

struct Transfer {
  Time start = 0;
  Time end = 0;
};

// Receives every transfer, for timelines; statistics stay outside the link.
class TransferObserver {
public:
  virtual ~TransferObserver() = default;
  virtual void on_transfer(const std::string& link, Bytes bytes, Transfer t, const char* cause) = 0;
};

class LinkDirection {
public:
  // `lanes` parallel links of the profiled kind multiply its bandwidth (NVLink counts).
  LinkDirection(std::string name, config::LinkCurve curve, unsigned lanes = 1);

  // Queues a transfer that may start at `ready`; returns when it starts and ends.
  Transfer transfer(Time ready, Bytes bytes, const char* cause);
  Time time_ns(Bytes bytes) const { return curve_.transfer_ns(bytes); }
  // Marks the direction busy until `end`, carrying `bytes` (a route's hop).
  void occupy(Time end, Bytes bytes);
  Time busy_until() const { return busy_until_; }
  const std::string& name() const { return name_; }
  Bytes bytes() const { return bytes_; }
  void set_observer(TransferObserver* observer) { observer_ = observer; }

private:
  std::string name_;
  config::LinkCurve curve_;
  Time busy_until_ = 0;
  Bytes bytes_ = 0;
  TransferObserver* observer_ = nullptr;
};

// A path of link directions between two processors. A transfer holds every hop from its start
// to its end (cut-through), so it starts when the busiest hop frees and runs at the slowest
// hop's rate; routes that share a hop contend on it.
class Route {
public:
  Route(std::string name, std::vector<LinkDirection*> hops)
      : name_(std::move(name)), hops_(std::move(hops)) {}

  Transfer transfer(Time ready, Bytes bytes, const char* cause);
  const std::string& name() const { return name_; }
  const std::vector<LinkDirection*>& hops() const { return hops_; }
  void set_observer(TransferObserver* observer) { observer_ = observer; }

  // Time this route carried a transfer, and, with its reverse route paired, the time both
  // carried one at once (how much the two directions overlapped). Pairing is symmetric.
  Time busy_ns() const { return busy_ns_; }
  static void pair(Route& a, Route& b);
  Time both_busy_ns() const { return overlap_ns_ + (reverse_ ? reverse_->overlap_ns_ : 0); }

private:
  struct Interval {
    Time start, end;
  };
  void account(Time start, Time end);

  std::string name_;
  std::vector<LinkDirection*> hops_;
  TransferObserver* observer_ = nullptr;
  Time busy_ns_ = 0;
  Time last_end_ = 0;
  Route* reverse_ = nullptr;
  // This route's transfers the reverse route may still overlap: each pair of transfers is
  // counted once, by the later of the two to be queued; both routes queue in time order.
  std::deque<Interval> recent_;
  Time overlap_ns_ = 0;
};

} // namespace faultline
