// One direction of a PCIe or NVLink connection: transfers queue in order and each takes
// overhead + size / bandwidth(size). The two directions of a link are independent (full duplex).
#pragma once

#include "sim/config/run_config.h"

#include <string>

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
  LinkDirection(std::string name, config::LinkCurve curve)
      : name_(std::move(name)), curve_(std::move(curve)) {}

  // Queues a transfer that may start at `ready`; returns when it starts and ends.
  Transfer transfer(Time ready, Bytes bytes, const char* cause);
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

} // namespace faultline
