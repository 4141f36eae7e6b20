// Launches in the GPU's order, for policies that plan from the kernel the GPU runs: where the
// CPU runs ahead (an issue-time trace), a launch is heard when the CPU issues it, kernels before
// it still queued; such a policy hears it here when the GPU reaches it (at the end of the kernel
// before it, or at once on an idle GPU), as it did where the host waited for each kernel.
#pragma once

#include "policies/policy.h"

#include <deque>
#include <string>

namespace faultline::policies {

class LaunchesInGpuOrder {
public:
  // Calls start(event) for `e` now if the GPU is idle, else once the kernels before it end.
  template <class F> void launch(const LaunchEvent& e, F start) {
    held_.push_back({e, e.name ? *e.name : std::string()});
    if (!busy_) start_next(e.now, start);
  }
  // After the policy handled kernel `e.kernel`'s end: the next held launch starts.
  template <class F> void kernel_end(const KernelEndEvent& e, F start) {
    busy_ = false;
    if (!held_.empty()) start_next(e.now, start);
  }

private:
  struct Held {
    LaunchEvent event;
    std::string name; // the event's name may not outlive its call
  };
  template <class F> void start_next(Time now, F start) {
    Held h = std::move(held_.front());
    held_.pop_front();
    h.event.now = now;
    h.event.name = &h.name;
    busy_ = true;
    start(h.event);
  }
  std::deque<Held> held_;
  bool busy_ = false;
};

} // namespace faultline::policies
