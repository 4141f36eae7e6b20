#include "sim/config/reader.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace faultline::config {
namespace {

bool non_negative(const json& v) {
  return is_non_negative_integer(v);
}

template <class T> struct Expect;

template <> struct Expect<uint64_t> {
  static constexpr const char* name = "unsigned integer";
  static bool ok(const json& v) { return non_negative(v); }
};
template <> struct Expect<uint32_t> {
  static constexpr const char* name = "unsigned 32-bit integer";
  static bool ok(const json& v) { return non_negative(v) && v.get<uint64_t>() <= UINT32_MAX; }
};
template <> struct Expect<int64_t> {
  static constexpr const char* name = "integer";
  static bool ok(const json& v) { return v.is_number_integer(); }
};
template <> struct Expect<double> {
  static constexpr const char* name = "number";
  static bool ok(const json& v) { return v.is_number(); }
};
template <> struct Expect<bool> {
  static constexpr const char* name = "boolean";
  static bool ok(const json& v) { return v.is_boolean(); }
};
template <> struct Expect<std::string> {
  static constexpr const char* name = "string";
  static bool ok(const json& v) { return v.is_string(); }
};

} // namespace

bool is_non_negative_integer(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

const char* type_name(const json& value) {
  if (value.is_number_unsigned()) return "unsigned integer";
  if (value.is_number_integer()) return value.get<int64_t>() < 0 ? "negative integer" : "integer";
  if (value.is_number_float()) return "number with a fraction";
  if (value.is_boolean()) return "boolean";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  if (value.is_object()) return "object";
  return "null";
}

Reader::Reader(const json& node, std::string file, std::string path)
    : Reader(node, std::move(file), std::move(path), nullptr,
             std::make_shared<json>(json::object())) {}

Reader::Reader(const json& node, std::string file, std::string path, json* out,
               std::shared_ptr<json> root)
    : node_(&node), file_(std::move(file)), path_(std::move(path)), root_(std::move(root)),
      out_(out ? out : root_.get()) {
  if (!node.is_object()) {
    throw ConfigError(file_ + ": " + path_ + ": expected object, got " + type_name(node));
  }
}

void Reader::fail(const std::string& key, const std::string& what) const {
  throw ConfigError(file_ + ": " + path_of(key) + ": " + what);
}

const json& Reader::at(const std::string& key) {
  read_.insert(key);
  auto it = node_->find(key);
  if (it == node_->end()) fail(key, "required value is missing");
  return *it;
}

template <class T> T Reader::get(const std::string& key) {
  const json& v = at(key);
  if (!Expect<T>::ok(v)) {
    fail(key,
         std::string("expected ") + Expect<T>::name + ", got " + type_name(v) + " " + v.dump());
  }
  (*out_)[key] = v;
  return v.get<T>();
}

template <class T> T Reader::get(const std::string& key, const T& fallback) {
  if (!has(key)) {
    read_.insert(key);
    (*out_)[key] = fallback;
    return fallback;
  }
  return get<T>(key);
}

template uint64_t Reader::get<uint64_t>(const std::string&);
template uint32_t Reader::get<uint32_t>(const std::string&);
template int64_t Reader::get<int64_t>(const std::string&);
template double Reader::get<double>(const std::string&);
template bool Reader::get<bool>(const std::string&);
template std::string Reader::get<std::string>(const std::string&);
template uint64_t Reader::get<uint64_t>(const std::string&, const uint64_t&);
template uint32_t Reader::get<uint32_t>(const std::string&, const uint32_t&);
template int64_t Reader::get<int64_t>(const std::string&, const int64_t&);
template double Reader::get<double>(const std::string&, const double&);
template bool Reader::get<bool>(const std::string&, const bool&);
template std::string Reader::get<std::string>(const std::string&, const std::string&);

Reader Reader::child(const std::string& key) {
  const json& v = at(key);
  if (!v.is_object()) fail(key, std::string("expected object, got ") + type_name(v));
  json& slot = (*out_)[key];
  if (!slot.is_object()) slot = json::object();
  return Reader(v, file_, path_of(key), &slot, root_);
}

Reader Reader::optional_child(const std::string& key) {
  static const json empty = json::object();
  if (has(key)) return child(key);
  read_.insert(key);
  json& slot = (*out_)[key];
  slot = json::object();
  return Reader(empty, file_, path_of(key), &slot, root_);
}

size_t Reader::array_size(const std::string& key) {
  const json& v = at(key);
  if (!v.is_array()) fail(key, std::string("expected array, got ") + type_name(v));
  (*out_)[key] = json::array();
  return v.size();
}

Reader Reader::element(const std::string& key, size_t index) {
  const json& v = (*node_)[key][index];
  const std::string at = key + "[" + std::to_string(index) + "]";
  if (!v.is_object()) fail(at, std::string("expected object, got ") + type_name(v));
  json& slot = (*out_)[key][index];
  slot = json::object();
  return Reader(v, file_, path_of(at), &slot, root_);
}

json Reader::raw(const std::string& key, const json& fallback) {
  read_.insert(key);
  json value = has(key) ? (*node_)[key] : fallback;
  (*out_)[key] = value;
  return value;
}

void Reader::finish() {
  for (auto& [key, value] : node_->items()) {
    if (read_.count(key)) continue;
    std::string known;
    for (const std::string& k : read_) known += (known.empty() ? "" : ", ") + k;
    fail(key, "unknown key; known keys here: " + known);
  }
}

// Where the number that nlohmann's out_of_range message quotes ('...') first appears in `text`.
std::string number_place(const std::string& text, const std::string& message) {
  const size_t open = message.find('\''), close = message.rfind('\'');
  if (open == std::string::npos || close <= open) return "";
  const size_t at = text.find(message.substr(open + 1, close - open - 1));
  if (at == std::string::npos) return "";
  const size_t line_start = text.rfind('\n', at);
  const size_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
  const size_t column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  return " at line " + std::to_string(line) + ", column " + std::to_string(column);
}

json load_json_file(const std::string& path) {
  // A folder opens as a stream but fails at the first read, with an exception of the library's
  // (found by fuzz_sweep: a sweep whose "base" named configs/runs).
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path + ": is a folder; expected a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& e) {
    throw ConfigError(path + ": cannot read: " + e.what());
  }
  try {
    return json::parse(text, nullptr, true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    throw ConfigError(path + ": invalid JSON: " + e.what());
  } catch (const json::out_of_range& e) { // a number no double holds, like 1e400
    throw ConfigError(path + ": invalid JSON" + number_place(text, e.what()) + ": " + e.what());
  }
}

} // namespace faultline::config
