#include "sim/trace/steps.h"

#include "sim/core/error.h"
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"

#include <filesystem>

namespace faultline::trace {
namespace {

const char* kind_of(const nlohmann::json& v) {
  if (v.is_number_float()) return "a fractional number";
  if (v.is_number_integer() && v.get<int64_t>() < 0) return "a negative number";
  return v.type_name();
}

std::string shown(const nlohmann::json& v) {
  const std::string text = v.dump();
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

// A non-negative integer field of one step object.
uint64_t field(const nlohmann::json& step, const char* name, const std::string& path,
               size_t index) {
  if (!step.contains(name))
    throw TraceError(steps_error(path, index, name, "expected a non-negative integer, missing"));
  const nlohmann::json& v = step[name];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    throw TraceError(steps_error(path, index, name,
                                 std::string("expected a non-negative integer, got ") + kind_of(v) +
                                     " " + shown(v)));
  }
  return v.get<uint64_t>();
}

} // namespace

std::string steps_error(const std::string& path, size_t index, const char* field,
                        const std::string& what) {
  return path + ": header: \"steps\"[" + std::to_string(index) + "]" +
         (field ? std::string(".") + field : std::string()) + ": " + what;
}

std::vector<Step> parse_steps(const nlohmann::json& metadata, const std::string& path) {
  if (!metadata.contains("steps")) return {Step{}};
  const nlohmann::json& steps = metadata["steps"];
  const std::string where = path + ": header: \"steps\": ";
  if (!steps.is_array()) {
    throw TraceError(where + "expected an array of {\"first_record\": N, \"start_ns\": T} " +
                     "objects, got " + steps.type_name() + " " + shown(steps));
  }
  if (steps.empty())
    throw TraceError(where + "expected at least one step (a trace of one step may leave the "
                             "key out)");
  std::vector<Step> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& s = steps[i];
    if (!s.is_object()) {
      throw TraceError(steps_error(path, i, nullptr,
                                   std::string("expected an object {\"first_record\": N, "
                                               "\"start_ns\": T}, got ") +
                                       s.type_name() + " " + shown(s)));
    }
    Step step{field(s, "first_record", path, i), 0};
    const uint64_t start = field(s, "start_ns", path, i);
    if (start > (uint64_t{1} << 62))
      throw TraceError(steps_error(path, i, "start_ns",
                                   "expected at most 2^62 ns, got " + std::to_string(start)));
    step.start_ns = static_cast<Time>(start);
    if (i > 0 && step.first_record <= out.back().first_record) {
      throw TraceError(steps_error(path, i, "first_record",
                                   "expected more than " + std::to_string(out.back().first_record) +
                                       " (steps[" + std::to_string(i - 1) +
                                       "].first_record: steps ascend), got " +
                                       std::to_string(step.first_record)));
    }
    if (i > 0 && step.start_ns < out.back().start_ns) {
      throw TraceError(steps_error(path, i, "start_ns",
                                   "expected at least " + std::to_string(out.back().start_ns) +
                                       " (steps[" + std::to_string(i - 1) +
                                       "].start_ns: steps ascend), got " +
                                       std::to_string(step.start_ns)));
    }
    out.push_back(step);
  }
  return out;
}

Timeline parse_timeline(const nlohmann::json& metadata, const std::string& path, uint32_t version) {
  if (!metadata.contains("timeline")) return Timeline::kSerial;
  const nlohmann::json& v = metadata["timeline"];
  const std::string where = path + ": header: \"timeline\": ";
  if (!v.is_string() || (v != "issue" && v != "serial"))
    throw TraceError(where + "expected \"issue\" or \"serial\", got " + shown(v));
  if (v == "issue" && version < 2)
    throw TraceError(where + "\"issue\" needs trace format version 2 (sync waits, queue " +
                     "delays); this trace is version " + std::to_string(version));
  return v == "issue" ? Timeline::kIssue : Timeline::kSerial;
}

std::vector<Time> parse_program_steps(const nlohmann::json& metadata, const std::string& path,
                                      size_t steps) {
  if (!metadata.contains("program_step_ns")) return {};
  const nlohmann::json& v = metadata["program_step_ns"];
  const std::string where = path + ": header: \"program_step_ns\"";
  if (!v.is_array() || v.size() != steps) {
    throw TraceError(where + ": expected an array of " + std::to_string(steps) +
                     " positive integers (one per step), got " +
                     (v.is_array() ? std::to_string(v.size()) + " values" : v.type_name()) + " " +
                     shown(v));
  }
  std::vector<Time> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& t = v[i];
    if (!t.is_number_integer() || t.get<int64_t>() <= 0 || t.get<int64_t>() > (int64_t{1} << 62))
      throw TraceError(where + "[" + std::to_string(i) +
                       "]: expected a positive integer of ns below 2^62, got " + kind_of(t) + " " +
                       shown(t));
    out.push_back(t.get<Time>());
  }
  return out;
}

nlohmann::json steps_json(const std::vector<Step>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const Step& s : steps)
    out.push_back({{"first_record", s.first_record}, {"start_ns", s.start_ns}});
  return out;
}

void rewrite_steps(const std::string& path, const std::vector<Step>& steps,
                   const std::vector<Time>& program_step_ns) {
  const std::string temporary = path + ".steps";
  {
    TraceReader in(path);
    nlohmann::json header = in.metadata();
    header["steps"] = steps_json(steps);
    if (!program_step_ns.empty()) header["program_step_ns"] = program_step_ns;
    TraceWriter out(temporary, header);
    Record r;
    while (in.next(r)) out.write(r);
    out.close();
  }
  std::filesystem::rename(temporary, path);
}

} // namespace faultline::trace
