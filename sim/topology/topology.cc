#include "sim/topology/topology.h"

#include "sim/core/error.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <cstdio>
#include <limits>

namespace faultline {
namespace {

struct EdgeData {
  unsigned edge = 0; // index into the topology's edges
  double gbps = 0;   // bandwidth of a 2 MB copy
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                    boost::no_property, EdgeData>;

// Path quality: a wider bottleneck wins, then fewer hops.
struct Width {
  double gbps = 0;
  unsigned hops = 0;
};
struct Wider {
  bool operator()(const Width& a, const Width& b) const {
    return a.gbps != b.gbps ? a.gbps > b.gbps : a.hops < b.hops;
  }
};
struct Extend {
  Width operator()(const Width& d, double gbps) const {
    return {std::min(d.gbps, gbps), d.hops + 1};
  }
};

// Keeps the host, switches and the route's two ends: traffic never passes through a third GPU.
struct NoThirdGpu {
  const std::vector<bool>* is_gpu = nullptr;
  unsigned from = 0, to = 0;
  bool operator()(unsigned v) const { return !(*is_gpu)[v] || v == from || v == to; }
};

std::vector<unsigned> widest(const Graph& g, const std::vector<bool>& is_gpu, unsigned from,
                             unsigned to) {
  const NoThirdGpu keep{&is_gpu, from, to};
  boost::filtered_graph<Graph, boost::keep_all, NoThirdGpu> view(g, boost::keep_all(), keep);
  const size_t n = boost::num_vertices(g);
  std::vector<unsigned> pred(n);
  std::vector<Width> dist(n);
  const auto index = boost::get(boost::vertex_index, g);
  boost::dijkstra_shortest_paths(
      view, from,
      boost::predecessor_map(boost::make_iterator_property_map(pred.begin(), index))
          .distance_map(boost::make_iterator_property_map(dist.begin(), index))
          .weight_map(boost::get(&EdgeData::gbps, g))
          .distance_compare(Wider())
          .distance_combine(Extend())
          .distance_inf(Width{0, std::numeric_limits<unsigned>::max()})
          .distance_zero(Width{std::numeric_limits<double>::infinity(), 0}));
  if (to != from && pred[to] == to) return {};
  std::vector<unsigned> path = {to};
  while (path.back() != from) path.push_back(pred[path.back()]);
  std::reverse(path.begin(), path.end());
  return path;
}

std::string kind_label(const std::string& kind) {
  return kind == "nvlink" ? "NVLink" : "PCIe";
}

} // namespace

Topology::Topology(const config::TopologySpec& spec) {
  names_.push_back("host");
  is_gpu_.push_back(false);
  for (const auto& gpu : spec.gpus) {
    gpu_vertex_.push_back(static_cast<unsigned>(names_.size()));
    names_.push_back(gpu.name);
    is_gpu_.push_back(true);
  }
  for (const auto& sw : spec.switches) {
    names_.push_back(sw);
    is_gpu_.push_back(false);
  }
  const auto vertex_of = [&](const std::string& name) {
    return static_cast<unsigned>(std::find(names_.begin(), names_.end(), name) - names_.begin());
  };
  Graph g(names_.size());
  for (const auto& l : spec.links) {
    const unsigned a = vertex_of(l.a), b = vertex_of(l.b);
    const std::string label = kind_label(l.profile.kind) + " ";
    edges_.push_back({a, b, l.profile.kind,
                      LinkDirection(label + l.a + "->" + l.b, l.profile.forward, l.count),
                      LinkDirection(label + l.b + "->" + l.a, l.profile.reverse, l.count)});
    Edge& e = edges_.back();
    e.gbps_2mb =
        static_cast<double>(kBlockSize) / static_cast<double>(e.forward.time_ns(kBlockSize));
    boost::add_edge(a, b, EdgeData{static_cast<unsigned>(edges_.size() - 1), e.gbps_2mb}, g);
  }
  const unsigned processors = gpus() + 1;
  routes_.resize(processors * processors);
  for (unsigned from = 0; from < processors; ++from)
    for (unsigned to = 0; to < processors; ++to) {
      if (from == to) continue;
      const unsigned u = vertex(static_cast<ProcessorId>(from));
      const unsigned v = vertex(static_cast<ProcessorId>(to));
      const std::vector<unsigned> path = widest(g, is_gpu_, u, v);
      if (path.empty()) {
        throw ConfigError("topology " + spec.name + ": no route from " + names_[u] + " to " +
                          names_[v] + " (GPUs do not forward traffic)");
      }
      std::vector<LinkDirection*> hops;
      for (size_t i = 0; i + 1 < path.size(); ++i) hops.push_back(hop(path[i], path[i + 1]));
      std::string name = hops.size() == 1 ? hops[0]->name() : names_[u] + "->" + names_[v];
      routes_[from * processors + to] = std::make_unique<Route>(name, std::move(hops));
    }
  for (unsigned from = 0; from < processors; ++from)
    for (unsigned to = from + 1; to < processors; ++to)
      Route::pair(*routes_[from * processors + to], *routes_[to * processors + from]);
}

LinkDirection* Topology::hop(unsigned u, unsigned v) {
  for (Edge& e : edges_) {
    if (e.a == u && e.b == v) return &e.forward;
    if (e.a == v && e.b == u) return &e.reverse;
  }
  throw SimulationError("topology: no link between " + names_[u] + " and " + names_[v]);
}

Route& Topology::route(ProcessorId from, ProcessorId to) {
  const unsigned processors = gpus() + 1;
  if (from >= processors || to >= processors || from == to) {
    throw SimulationError("no route from processor " + std::to_string(from) + " to " +
                          std::to_string(to) + " in a machine of " + std::to_string(gpus()) +
                          " GPUs");
  }
  return *routes_[from * processors + to];
}

std::vector<unsigned> Topology::nvlink_neighbours(unsigned gpu) const {
  std::vector<std::pair<double, unsigned>> found;
  const unsigned v = gpu_vertex_.at(gpu);
  for (const Edge& e : edges_) {
    if (e.kind != "nvlink" || (e.a != v && e.b != v)) continue;
    const unsigned other = e.a == v ? e.b : e.a;
    if (!is_gpu_[other]) continue;
    const auto index =
        std::find(gpu_vertex_.begin(), gpu_vertex_.end(), other) - gpu_vertex_.begin();
    found.push_back({-e.gbps_2mb, static_cast<unsigned>(index)});
  }
  std::sort(found.begin(), found.end());
  std::vector<unsigned> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

std::string Topology::describe() const {
  std::string out;
  const unsigned processors = gpus() + 1;
  for (unsigned from = 0; from < processors; ++from)
    for (unsigned to = 0; to < processors; ++to) {
      if (from == to) continue;
      const Route& r = *routes_[from * processors + to];
      Time slowest = 0;
      std::string hops;
      for (const LinkDirection* h : r.hops()) {
        slowest = std::max(slowest, h->time_ns(kBlockSize));
        hops += (hops.empty() ? "" : ", ") + h->name();
      }
      char gbps[32];
      std::snprintf(gbps, sizeof(gbps), "%.1f", static_cast<double>(kBlockSize) / slowest);
      out += names_[vertex(static_cast<ProcessorId>(from))] + " -> " +
             names_[vertex(static_cast<ProcessorId>(to))] + ": " + hops + " (" + gbps +
             " GB/s for 2 MB)\n";
    }
  return out;
}

void Topology::set_observer(TransferObserver* observer) {
  for (auto& r : routes_)
    if (r) r->set_observer(observer);
}

} // namespace faultline
