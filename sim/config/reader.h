// Strict, typed reading of JSON config objects.
#pragma once

#include "sim/core/error.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace faultline::config {

using nlohmann::json;

// Contract: a Reader views one JSON object. Every get() names the key and the expected type;
// a missing required key, a value of the wrong type or (at finish()) a key nobody read throws
// ConfigError with the file and the JSON path. Every value read, defaults included, is copied
// into resolved(), which is what result files record as "the config that ran".
class Reader {
public:
  Reader(const json& node, std::string file, std::string path = "$");

  template <class T> T get(const std::string& key);
  template <class T> T get(const std::string& key, const T& fallback);
  bool has(const std::string& key) const { return node_->contains(key); }
  Reader child(const std::string& key);
  // Like child(), but a missing key reads as an empty object (all defaults).
  Reader optional_child(const std::string& key);
  // An array of objects: its length, then a Reader for each element (path "key[i]").
  size_t array_size(const std::string& key);
  Reader element(const std::string& key, size_t index);
  const std::string& path() const { return path_; }
  // A copy of a sub-tree that the caller interprets itself (e.g. a policy's parameters).
  json raw(const std::string& key, const json& fallback);
  void finish();
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  std::string path_of(const std::string& key) const { return path_ + "." + key; }
  const std::string& file() const { return file_; }
  json& resolved() { return *out_; }

private:
  Reader(const json& node, std::string file, std::string path, json* out,
         std::shared_ptr<json> root);
  const json& at(const std::string& key);

  const json* node_;
  std::string file_;
  std::string path_;
  std::shared_ptr<json> root_; // owns the resolved tree
  json* out_;
  std::set<std::string> read_;
};

const char* type_name(const json& value);
// Parsed JSON holds positive integers as unsigned, but JSON built in code may hold them signed.
bool is_non_negative_integer(const json& value);

// Reads a JSON file; a syntax error names the file, line and column.
json load_json_file(const std::string& path);

} // namespace faultline::config
