// Deterministic discrete-event engine.
#pragma once

#include "sim/core/types.h"

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

namespace faultline {

// Contract: a component that owns events. handle() is called once per scheduled event, in
// (time, priority, sequence) order; describe_in_flight() says what the component is waiting
// for, for the watchdog's message.
class EventHandler {
public:
  virtual ~EventHandler() = default;
  virtual void handle(uint32_t kind, Time now) = 0;
  virtual std::string describe_in_flight() const = 0;
};

// Events at the same time run in priority order (lower first), then in the order scheduled,
// so a run never depends on heap layout or pointer values: same inputs, same sequence.
enum class Priority : uint8_t { kTransfer = 0, kKernel = 1, kDriver = 2, kHost = 3 };

class Engine {
public:
  explicit Engine(Time watchdog_ns) : watchdog_ns_(watchdog_ns) {}

  void add_component(const EventHandler* component) { components_.push_back(component); }
  void schedule(Time at, Priority priority, EventHandler* handler, uint32_t kind);
  // Runs until no event is left. Throws SimulationError if simulated time moves more than the
  // watchdog span past the last progress() call, naming what every component has in flight.
  void run();
  Time now() const { return now_; }
  // Time of the earliest pending event, or INT64_MAX when none.
  Time next_time() const { return queue_.empty() ? INT64_MAX : queue_.top().at; }
  void progress() { last_progress_ = now_; }
  std::string describe_in_flight() const;

private:
  struct Event {
    Time at;
    Priority priority;
    uint64_t sequence;
    EventHandler* handler;
    uint32_t kind;
    bool operator>(const Event& o) const {
      if (at != o.at) return at > o.at;
      if (priority != o.priority) return priority > o.priority;
      return sequence > o.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  std::vector<const EventHandler*> components_;
  Time now_ = 0;
  Time last_progress_ = 0;
  Time watchdog_ns_;
  uint64_t sequence_ = 0;
};

} // namespace faultline
