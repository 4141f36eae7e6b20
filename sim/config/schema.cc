#include "sim/config/schema.h"

#include "sim/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace faultline::config {
namespace {

std::vector<std::function<Section()>>& makers() {
  static std::vector<std::function<Section()>> all;
  return all;
}

// A Markdown table cell: pipes would end the cell.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string default_cell(const Field& f) {
  if (!f.default_value.empty()) return "`" + f.default_value + "`";
  if (f.default_note == "required") return "**required**";
  return f.default_note;
}

std::string type_cell(const Field& f) {
  return f.unit.empty() ? f.type : f.type + ", " + f.unit;
}

} // namespace

namespace detail {

std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e18) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string value_text(const json& v) {
  return v.dump();
}

std::string bound_text(const std::optional<double>& lo, bool lo_open,
                       const std::optional<double>& hi, bool hi_open) {
  if (lo && hi && !lo_open && !hi_open) return number_text(*lo) + " to " + number_text(*hi);
  std::string out;
  if (lo) out = (lo_open ? "more than " : "at least ") + number_text(*lo);
  if (hi)
    out += (out.empty() ? "" : " and ") + std::string(hi_open ? "less than " : "at most ") +
           number_text(*hi);
  return out;
}

} // namespace detail

bool register_section(std::function<Section()> make) {
  makers().push_back(std::move(make));
  return true;
}

std::vector<Section> schema_sections() {
  std::vector<Section> out;
  for (const auto& make : makers()) out.push_back(make());
  std::sort(out.begin(), out.end(),
            [](const Section& a, const Section& b) { return a.name < b.name; });
  return out;
}

std::string schema_markdown(const Section& s) {
  if (s.fields.empty()) return "No keys: the object must be empty.\n";
  std::string out = "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (const Field& f : s.fields) {
    out += "| `" + f.name + "` | " + cell(type_cell(f)) + " | " + cell(default_cell(f)) + " | " +
           cell(f.allowed) + " | " + cell(f.description) + " |\n";
  }
  return out;
}

json schema_json(const Section& s) {
  json fields = json::array();
  for (const Field& f : s.fields) {
    json one = {{"name", f.name},
                {"type", f.type},
                {"unit", f.unit},
                {"allowed", f.allowed},
                {"required", f.default_note == "required"},
                {"description", f.description}};
    one["default"] = f.default_value.empty() ? json() : json::parse(f.default_value);
    if (!f.default_note.empty()) one["default_note"] = f.default_note;
    fields.push_back(std::move(one));
  }
  return {{"section", s.name}, {"where", s.where}, {"fields", fields}};
}

void print_schema(std::ostream& out, const std::string& format, const std::string& wanted) {
  if (format != "markdown" && format != "json")
    throw UsageError("--format " + format + ": expected markdown or json");
  std::vector<Section> sections = schema_sections();
  if (!wanted.empty()) {
    auto it = std::find_if(sections.begin(), sections.end(),
                           [&](const Section& s) { return s.name == wanted; });
    if (it == sections.end()) {
      std::string known;
      for (const Section& s : sections) known += (known.empty() ? "" : ", ") + s.name;
      throw UsageError("unknown config section \"" + wanted + "\"; known: " + known);
    }
    sections = {*it};
  }
  if (format == "json") {
    json all = json::array();
    for (const Section& s : sections) all.push_back(schema_json(s));
    out << (wanted.empty() ? all : all[0]).dump(2) << "\n";
  } else if (!wanted.empty()) {
    out << schema_markdown(sections[0]);
  } else {
    for (size_t i = 0; i < sections.size(); ++i) {
      out << (i ? "\n" : "") << "## " << sections[i].name << "\n\n"
          << sections[i].where << "\n\n"
          << schema_markdown(sections[i]);
    }
  }
}

} // namespace faultline::config
