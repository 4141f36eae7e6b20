// The machine as a graph (Boost.Graph): host, GPUs and PCIe switches as vertices, PCIe and NVLink
// connections as edges with their link counts. Every ordered pair of processors gets one route:
// the widest path (largest bottleneck bandwidth for a 2 MB copy; fewest hops on a tie) that
// passes through no third GPU, since GPUs do not forward traffic. Each edge has one queue per
// direction, so routes that share a link contend on it.
#pragma once

#include "sim/config/run_config.h"
#include "sim/link/link.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace faultline {

class Topology {
public:
  // Throws ConfigError when some pair of processors has no route.
  explicit Topology(const config::TopologySpec& spec);

  unsigned gpus() const { return static_cast<unsigned>(gpu_vertex_.size()); }
  Route& route(ProcessorId from, ProcessorId to);
  // GPUs joined to `gpu` by a direct NVLink link, widest first (ties: lower index).
  std::vector<unsigned> nvlink_neighbours(unsigned gpu) const;
  // Every route as text: "GPU0 -> GPU1: NVLink GPU0->GPU1 (100 GB/s at 2 MB)".
  std::string describe() const;
  void set_observer(TransferObserver* observer);

private:
  struct Edge {
    unsigned a, b; // vertices; forward runs a -> b
    std::string kind;
    LinkDirection forward, reverse;
    double gbps_2mb = 0; // forward bandwidth of a 2 MB copy, all lanes
  };
  std::vector<unsigned> widest_path(unsigned from, unsigned to) const;
  LinkDirection* hop(unsigned u, unsigned v);
  unsigned vertex(ProcessorId p) const { return p == kHost ? 0 : gpu_vertex_.at(p - 1); }

  std::vector<std::string> names_; // by vertex; 0 is the host
  std::vector<bool> is_gpu_;
  std::vector<unsigned> gpu_vertex_;
  std::deque<Edge> edges_;
  std::vector<std::unique_ptr<Route>> routes_; // [from * processors + to]
};

} // namespace faultline
