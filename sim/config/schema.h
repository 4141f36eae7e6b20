// Config keys declared once. A section's table binds each key to a struct member with its name,
// type, bounds, unit and meaning; the struct's member initialiser is its default. The same table
// reads the key (read_fields: typed, bounds-checked, recorded in the resolved config) and
// documents it (`faultline config schema`, the key tables of configs/README.md and of each
// policy's README, generated from it and checked by tests/doc_tables.sh).
#pragma once

#include "sim/config/reader.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace faultline::config {

// One key as documented.
struct Field {
  std::string name;
  std::string type;          // "unsigned integer", "integer", "number", "boolean", "string", ...
  std::string unit;          // "ns", "bytes", "percent", "2 MB blocks"; "" when none
  std::string default_value; // JSON text of the default; "" when there is none (see note)
  std::string default_note;  // words instead of a value: "required", "the GPU's host_link", ...
  std::string allowed;       // bounds or choices in words ("1 to 100"); "" when any value
  std::string description;
};

// The keys of one JSON object: a run config's `driver`, a GPU profile, a policy's params...
struct Section {
  std::string name;  // "run.driver", "gpu", "policy.deepum"
  std::string where; // where the object sits, in words
  std::vector<Field> fields;
};

// A key bound to a member of S: its documentation and how it is read into an S.
template <class S> struct Binding {
  Field doc;
  std::function<void(Reader&, S&)> read;
};
template <class S> using Fields = std::vector<Binding<S>>;

// Reads every bound key of `object` from `r`, in table order; keys absent from the JSON keep the
// member's current value (its default) unless the field is required. Does not call finish().
template <class S> void read_fields(Reader& r, S& object, const Fields<S>& fields) {
  for (const Binding<S>& b : fields) b.read(r, object);
}

template <class S> std::vector<Field> docs(const Fields<S>& fields) {
  std::vector<Field> out;
  for (const Binding<S>& b : fields) out.push_back(b.doc);
  return out;
}

// Sections by name, for `faultline config schema`. Registration happens at static
// initialisation (FAULTLINE_REGISTER_SCHEMA), so `make` runs only when the schema is printed.
bool register_section(std::function<Section()> make);
std::vector<Section> schema_sections();        // sorted by name
std::string schema_markdown(const Section& s); // the table alone, as the READMEs hold it
nlohmann::json schema_json(const Section& s);

// What `faultline config schema` prints: every section (or the one named) as Markdown tables
// (the READMEs') or JSON. Throws UsageError for an unknown format or section.
void print_schema(std::ostream& out, const std::string& format, const std::string& section);

namespace detail {

template <class T> constexpr const char* type_label() {
  if constexpr (std::is_same_v<T, bool>)
    return "boolean";
  else if constexpr (std::is_same_v<T, std::string>)
    return "string";
  else if constexpr (std::is_same_v<T, double>)
    return "number";
  else if constexpr (std::is_same_v<T, uint32_t>)
    return "unsigned 32-bit integer";
  else if constexpr (std::is_same_v<T, uint64_t>)
    return "unsigned integer";
  else {
    static_assert(std::is_same_v<T, int64_t>, "Reader reads no such type");
    return "integer";
  }
}

std::string number_text(double v);
std::string value_text(const json& v); // JSON text, for defaults and messages

// "expected 1 to 100, got 101"-style bound text ("1 to 100", "at least 1", "more than 0").
std::string bound_text(const std::optional<double>& lo, bool lo_open,
                       const std::optional<double>& hi, bool hi_open);

} // namespace detail

// A scalar key bound to `S::*member`; build with field() and the modifiers, then put it in a
// Fields<S> table (it converts to a Binding<S>).
template <class S, class T> class Scalar {
public:
  Scalar(T S::*member, std::string name, std::string description) : member_(member) {
    doc_.name = std::move(name);
    doc_.type = detail::type_label<T>();
    doc_.description = std::move(description);
  }
  Scalar& unit(std::string u) { return doc_.unit = std::move(u), *this; }
  Scalar& at_least(double v) { return lo_ = v, lo_open_ = false, *this; }
  Scalar& above(double v) { return lo_ = v, lo_open_ = true, *this; }
  Scalar& at_most(double v) { return hi_ = v, hi_open_ = false, *this; }
  Scalar& below(double v) { return hi_ = v, hi_open_ = true, *this; }
  Scalar& range(double lo, double hi) { return at_least(lo).at_most(hi); }
  // Words added to the bound, e.g. "one 2 MB chunk": "at least 2097152 (one 2 MB chunk)".
  Scalar& bound_note(std::string note) { return note_ = std::move(note), *this; }
  // Any other rule: `ok` decides, `words` say it in docs and messages ("expected <words>").
  Scalar& rule(std::function<bool(const T&)> ok, std::string words) {
    return rule_ = std::move(ok), rule_words_ = std::move(words), *this;
  }
  Scalar& required() { return presence_ = kRequired, *this; }
  // Read only when given; when absent, not recorded in the resolved config.
  Scalar& optional(std::string note) { return presence_ = kOptional, note_absent_ = note, *this; }
  // Absent: the value of another member (read before this one), named in the docs.
  Scalar& default_from(T S::*other, const std::string& other_name) {
    return from_ = other, note_absent_ = "`" + other_name + "`'s value", *this;
  }

  operator Binding<S>() const { // NOLINT(google-explicit-constructor): tables list fields
    return {documented(), [spec = *this](Reader& r, S& s) { spec.read(r, s); }};
  }

private:
  enum Presence { kDefault, kRequired, kOptional };

  std::string allowed() const {
    std::string text = rule_ ? rule_words_ : detail::bound_text(lo_, lo_open_, hi_, hi_open_);
    if (!note_.empty()) text += " (" + note_ + ")";
    return text;
  }
  Field documented() const {
    Field f = doc_;
    f.allowed = allowed();
    if (presence_ == kRequired)
      f.default_note = "required";
    else if (presence_ == kOptional || from_)
      f.default_note = note_absent_;
    else
      f.default_value = detail::value_text(json(S{}.*member_));
    return f;
  }
  void read(Reader& r, S& s) const {
    const std::string& key = doc_.name;
    if (presence_ == kOptional && !r.has(key)) return;
    const T value =
        presence_ == kDefault ? r.get<T>(key, from_ ? s.*from_ : s.*member_) : r.get<T>(key);
    bool ok = !rule_ || rule_(value);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const auto v = static_cast<double>(value);
      if (lo_ && (lo_open_ ? v <= *lo_ : v < *lo_)) ok = false;
      if (hi_ && (hi_open_ ? v >= *hi_ : v > *hi_)) ok = false;
    }
    if (!ok) r.fail(key, "expected " + allowed() + ", got " + detail::value_text(json(value)));
    s.*member_ = value;
  }

  T S::*member_;
  Field doc_;
  std::optional<double> lo_, hi_;
  bool lo_open_ = false, hi_open_ = false;
  std::string note_;
  std::function<bool(const T&)> rule_;
  std::string rule_words_;
  Presence presence_ = kDefault;
  std::string note_absent_;
  T S::*from_ = nullptr;
};

template <class S, class T> Scalar<S, T> field(T S::*member, std::string name, std::string about) {
  return Scalar<S, T>(member, std::move(name), std::move(about));
}

// A string key that selects one of named values (an enum, or the string itself).
template <class S, class T>
Binding<S> choice(T S::*member, std::string name, std::vector<std::pair<std::string, T>> options,
                  std::string description, bool required = false) {
  std::string allowed;
  for (size_t i = 0; i < options.size(); ++i) {
    allowed += (i == 0 ? "" : i + 1 == options.size() ? " or " : ", ");
    allowed += "\"" + options[i].first + "\"";
  }
  Field doc{std::move(name), "string", "", "", "", allowed, std::move(description)};
  if (required) doc.default_note = "required";
  for (const auto& [text, value] : options)
    if (!required && value == S{}.*member) doc.default_value = detail::value_text(json(text));
  auto read = [member, options, allowed, required, key = doc.name](Reader& r, S& s) {
    std::string current;
    for (const auto& [text, value] : options)
      if (value == s.*member) current = text;
    const std::string text = required ? r.get<std::string>(key) : r.get<std::string>(key, current);
    for (const auto& [t, value] : options)
      if (t == text) return void(s.*member = value);
    r.fail(key, "expected " + allowed + ", got \"" + text + "\"");
  };
  return {std::move(doc), std::move(read)};
}

// A string key whose value is itself the choice.
template <class S>
Binding<S> one_of(std::string S::*member, std::string name, const std::vector<std::string>& options,
                  std::string description, bool required = false) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& o : options) pairs.emplace_back(o, o);
  return choice(member, std::move(name), std::move(pairs), std::move(description), required);
}

// A JSON object kept as it is, for code that reads it later (a policy's params).
template <class S>
Binding<S> raw_object(json S::*member, std::string name, std::string description) {
  Field doc{std::move(name), "object", "", "{}", "", "", std::move(description)};
  auto read = [member, key = doc.name](Reader& r, S& s) {
    s.*member = r.raw(key, json::object());
    if (!(s.*member).is_object()) r.fail(key, "expected object");
  };
  return {std::move(doc), std::move(read)};
}

// `b`, read only when the object has no key `other` (which then stands for it).
template <class S> Binding<S> unless_given(const std::string& other, Binding<S> b) {
  auto read = [other, inner = b.read](Reader& r, S& s) {
    if (!r.has(other)) inner(r, s);
  };
  return {std::move(b.doc), std::move(read)};
}

// A key read by code of its own (objects, arrays, profiles, keys that depend on others); `doc`
// says what it holds. The reader gets the Reader of the enclosing object.
template <class S> Binding<S> custom(Field doc, std::function<void(Reader&, S&)> read) {
  return {std::move(doc), std::move(read)};
}

// Reads a whole object: a default S, then every bound key; unknown keys are an error.
template <class S>
S read_object(const json& doc, const std::string& file, const std::string& path,
              const Fields<S>& fields) {
  Reader r(doc, file, path);
  S s;
  read_fields(r, s, fields);
  r.finish();
  return s;
}

// A nested object whose keys have a table of their own (section `section_name`).
template <class S, class C>
Binding<S> object(C S::*member, std::string name, const Fields<C>& (*fields)(),
                  const std::string& section_name, std::string description, bool optional = false) {
  Field doc{std::move(name),       "object", "", "", "", "keys of `" + section_name + "`",
            std::move(description)};
  if (optional)
    doc.default_value = "{}";
  else
    doc.default_note = "required";
  auto read = [member, fields, optional, key = doc.name](Reader& r, S& s) {
    Reader child = optional ? r.optional_child(key) : r.child(key);
    read_fields(child, s.*member, fields());
    child.finish();
  };
  return {std::move(doc), std::move(read)};
}

} // namespace faultline::config

#define FAULTLINE_SCHEMA_CONCAT2(a, b) a##b
#define FAULTLINE_SCHEMA_CONCAT(a, b) FAULTLINE_SCHEMA_CONCAT2(a, b)
// Registers a section: FAULTLINE_REGISTER_SCHEMA(name, where, fields_function).
#define FAULTLINE_REGISTER_SCHEMA(name, where, fields)                                             \
  static const bool FAULTLINE_SCHEMA_CONCAT(faultline_schema_, __LINE__) =                         \
      ::faultline::config::register_section([] {                                                   \
        return ::faultline::config::Section{name, where, ::faultline::config::docs(fields())};     \
      })
