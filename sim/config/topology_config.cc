// The machine a run config describes: a topology preset or file, or uniform GPUs.
#include "sim/config/profile_file.h"
#include "sim/config/reader.h"
#include "sim/config/run_config.h"

#include <algorithm>

namespace faultline::config {
namespace {

TopologySpec uniform_topology(const RunConfig& c) {
  TopologySpec t;
  t.name = "uniform";
  for (unsigned i = 0; i < c.gpus; ++i) t.gpus.push_back({"GPU" + std::to_string(i), c.gpu});
  for (unsigned i = 0; i < c.gpus; ++i) {
    t.links.push_back({"host", t.gpus[i].name, c.host_link, 1});
    for (unsigned j = i + 1; j < c.gpus; ++j)
      t.links.push_back({t.gpus[i].name, t.gpus[j].name, c.peer_link, 1});
  }
  return t;
}

// A node name not used yet ("host" is taken).
std::string read_new_name(Reader& r, std::vector<std::string>& nodes) {
  const std::string name = r.get<std::string>("name");
  if (name.empty() || std::find(nodes.begin(), nodes.end(), name) != nodes.end())
    r.fail("name", "expected a name not used by another node (\"host\" is the host)");
  nodes.push_back(name);
  return name;
}

std::string read_node(Reader& r, const std::string& key, const std::vector<std::string>& nodes) {
  const std::string name = r.get<std::string>(key);
  if (std::find(nodes.begin(), nodes.end(), name) == nodes.end()) {
    std::string known;
    for (const auto& n : nodes) known += (known.empty() ? "" : ", ") + n;
    r.fail(key, "unknown node \"" + name + "\"; the topology has: " + known);
  }
  return name;
}

} // namespace

TopologySpec read_topology(const json& spec, const std::string& file, json& resolved) {
  // A preset or file by name, or the topology itself written inline.
  const bool inline_doc = spec.is_object() && !spec.contains("profile");
  ProfileDoc p =
      inline_doc ? ProfileDoc{spec, file} : resolve_profile("topologies", spec, file, "$.topology");
  Reader r(p.doc, p.label, "$.topology");
  TopologySpec t;
  t.name = r.get<std::string>("name");
  r.raw("sources", json::array());
  std::vector<std::string> nodes = {"host"};
  const size_t gpus = r.array_size("gpus");
  if (gpus == 0 || gpus > kMaxGpus)
    r.fail("gpus", "expected 1 to " + std::to_string(kMaxGpus) + " GPUs");
  json gpu_resolved = json::array();
  for (size_t i = 0; i < gpus; ++i) {
    Reader g = r.element("gpus", i);
    json one;
    t.gpus.push_back({read_new_name(g, nodes), load_gpu_profile(g.raw("profile", nullptr), p.label,
                                                                g.path() + ".profile", one)});
    g.finish();
    gpu_resolved.push_back({{"name", t.gpus.back().name}, {"profile", one}});
  }
  const size_t switches = r.has("switches") ? r.array_size("switches") : 0;
  for (size_t i = 0; i < switches; ++i) {
    Reader sw = r.element("switches", i);
    t.switches.push_back(read_new_name(sw, nodes));
    sw.finish();
  }
  const size_t links = r.array_size("links");
  json link_resolved = json::array();
  for (size_t i = 0; i < links; ++i) {
    Reader l = r.element("links", i);
    TopologySpec::Link link;
    link.a = read_node(l, "from", nodes);
    link.b = read_node(l, "to", nodes);
    if (link.a == link.b) l.fail("to", "a link joins two different nodes");
    json one;
    link.profile = load_link_profile(l.raw("link", nullptr), p.label, l.path() + ".link", one);
    link.count = l.get<uint32_t>("count", 1);
    if (link.count == 0 || link.count > 64) l.fail("count", "expected 1 to 64 links");
    for (const auto& other : t.links)
      if ((other.a == link.a && other.b == link.b) || (other.a == link.b && other.b == link.a))
        l.fail("to",
               "a second link between " + link.a + " and " + link.b + "; give one with a count");
    l.finish();
    link_resolved.push_back(
        {{"from", link.a}, {"to", link.b}, {"count", link.count}, {"link", one}});
    t.links.push_back(std::move(link));
  }
  r.finish();
  resolved = r.resolved();
  resolved["gpus"] = gpu_resolved;
  resolved["links"] = link_resolved;
  return t;
}

TopologySpec machine_topology(const RunConfig& c) {
  return c.topology.gpus.empty() ? uniform_topology(c) : c.topology;
}

} // namespace faultline::config
