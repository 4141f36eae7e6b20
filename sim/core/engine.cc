#include "sim/core/engine.h"

#include "sim/core/error.h"

namespace faultline {

void Engine::schedule(Time at, Priority priority, EventHandler* handler, uint32_t kind) {
  if (at < now_) {
    throw SimulationError("event scheduled at " + std::to_string(at) + " ns, before now (" +
                          std::to_string(now_) + " ns): time must never go back");
  }
  queue_.push(Event{at, priority, sequence_++, handler, kind});
}

void Engine::run() {
  while (!queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    now_ = e.at;
    if (now_ - last_progress_ > watchdog_ns_) {
      throw SimulationError("watchdog: no progress for " + std::to_string(now_ - last_progress_) +
                            " ns of simulated time (limit " + std::to_string(watchdog_ns_) +
                            " ns); in flight:\n" + describe_in_flight());
    }
    e.handler->handle(e.kind, now_);
  }
}

std::string Engine::describe_in_flight() const {
  std::string out;
  for (const EventHandler* c : components_) out += "  " + c->describe_in_flight() + "\n";
  return out;
}

} // namespace faultline
