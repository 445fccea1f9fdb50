// A fast, append-only JSON writer.
//
// Writes into a std::string it owns. Strings are escaped per RFC 8259 (quote, backslash,
// control characters as \uXXXX or the short forms, invalid UTF-8 replaced by U+FFFD), so
// any byte sequence from a peer produces valid JSON. Commas are inserted automatically.
// Misuse (a value where a key is expected, unbalanced End*) is a programming error and
// asserts. Optional indentation gives the `?pretty` form. Not thread-safe.
#ifndef KUBESTAT_CORE_JSON_WRITER_H_
#define KUBESTAT_CORE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kubestat {

class JsonWriter {
 public:
  // indent == 0: compact; otherwise pretty-printed with that many spaces per level.
  explicit JsonWriter(int indent = 0);

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // The key of the next member; only inside an object.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view value);
  // Key / String for text the program made itself and that needs no escaping: printable
  // ASCII without '"' or '\\' (literal keys, quantities, timestamps, durations). Written
  // as is, without the per-byte scan; a build with assertions checks the promise.
  JsonWriter& PlainKey(std::string_view key);
  JsonWriter& PlainString(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  // Shortest representation that round-trips; NaN and infinities are written as null.
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Inserts already-serialized JSON as one value (the caller vouches for it).
  JsonWriter& Raw(std::string_view json);

  // Key(k).String(v) etc. in one call.
  JsonWriter& Member(std::string_view key, std::string_view value) {
    return Key(key).String(value);
  }
  JsonWriter& Member(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Member(std::string_view key, int64_t value) { return Key(key).Int(value); }
  JsonWriter& Member(std::string_view key, bool value) { return Key(key).Bool(value); }

  // The document so far; complete once every Begin* has its End*.
  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }
  void Reserve(size_t n) { out_.reserve(n); }

  // Appends `value` escaped and quoted to `out`.
  static void AppendQuoted(std::string& out, std::string_view value);

 private:
  void BeforeValue();
  void BeforeKey();
  void NewlineAndIndent();

  std::string out_;
  int indent_;
  // One entry per open container: true for an object.
  std::vector<bool> is_object_;
  // Whether the innermost container already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace kubestat

#endif  // KUBESTAT_CORE_JSON_WRITER_H_
