// Every field of a result document (`faultline sim --out`, `faultline replay --out`), declared
// once with its unit and meaning. `faultline results fields` prints the table that sim/README.md
// holds; tests check that every field a run writes is declared here and that the README's table
// is this one.
#pragma once

#include <string>
#include <vector>

namespace faultline {

struct ResultField {
  std::string path;     // JSON path; "[]" stands for every element of an array
  std::string unit;     // ns, bytes, count, 2 MB chunks, text, ...
  // "sim", "live" (the replay), "both" (those two), "program" (faultline run) or "all"; the
  // program backend writes, beside its own, the results and step fields sim/program/README.md
  // lists.
  std::string backends;
  std::string meaning;
};

const std::vector<ResultField>& result_fields();

// The table as Markdown, one row per field, in declaration order.
std::string result_fields_markdown();

// Whether `path` (array indices written as "[]") is declared, or lies inside a free-form object
// that is (the trace header, the resolved config).
bool result_field_declared(const std::string& path);

} // namespace faultline
