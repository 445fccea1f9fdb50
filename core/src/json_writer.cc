#include "kubestat/core/json_writer.h"

#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <string_view>

namespace kubestat {
namespace {

// What a byte needs when written inside a JSON string: 0 = copy as is, 1 = escape (control
// characters, quote, backslash), 2 = start of a multi-byte UTF-8 sequence to validate.
constexpr auto kByteClass = [] {
  std::array<uint8_t, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = 1;
  table['"'] = 1;
  table['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) table[c] = 2;
  return table;
}();

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Whether `text` is printable ASCII without '"' or '\\' (PlainKey, PlainString).
[[maybe_unused]] bool IsPlain(std::string_view text) {
  for (const char c : text) {
    if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') return false;
  }
  return true;
}

// Length of the well-formed UTF-8 sequence starting at s[0] (a byte >= 0x80), or 0 when it
// is ill-formed; then *skip is the length of its maximal ill-formed subpart (Unicode 15,
// section 3.9, "U+FFFD Substitution of Maximal Subparts"), which becomes one U+FFFD.
size_t ValidUtf8Length(const unsigned char* s, size_t n, size_t* skip) {
  const unsigned char b0 = s[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *skip = 1;  // a continuation byte, C0/C1 (always overlong) or F5..FF
    return 0;
  }
  size_t i = 1;
  for (; i < len; ++i) {
    if (i >= n) break;
    const unsigned char b = s[i];
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  if (i == len) return len;
  *skip = i;
  return 0;
}

}  // namespace

JsonWriter::JsonWriter(int indent) : indent_(indent) {}

void JsonWriter::NewlineAndIndent() {
  out_.push_back('\n');
  out_.append(is_object_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (is_object_.empty()) return;  // the top-level value
  assert(!is_object_.back() && "JsonWriter: a value inside an object needs a Key() first");
  if (has_element_.back()) out_.push_back(',');
  has_element_.back() = true;
  if (indent_ > 0) NewlineAndIndent();
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  is_object_.push_back(true);
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  assert(!is_object_.empty() && is_object_.back() && "JsonWriter: EndObject without an object");
  assert(!after_key_ && "JsonWriter: EndObject after a Key() without its value");
  const bool had_element = has_element_.back();
  is_object_.pop_back();
  has_element_.pop_back();
  if (had_element && indent_ > 0) NewlineAndIndent();
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  is_object_.push_back(false);
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  assert(!is_object_.empty() && !is_object_.back() && "JsonWriter: EndArray without an array");
  const bool had_element = has_element_.back();
  is_object_.pop_back();
  has_element_.pop_back();
  if (had_element && indent_ > 0) NewlineAndIndent();
  out_.push_back(']');
  return *this;
}

void JsonWriter::BeforeKey() {
  assert(!is_object_.empty() && is_object_.back() && "JsonWriter: Key() outside an object");
  assert(!after_key_ && "JsonWriter: two Key() calls in a row");
  if (has_element_.back()) out_.push_back(',');
  has_element_.back() = true;
  if (indent_ > 0) NewlineAndIndent();
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeKey();
  AppendQuoted(out_, key);
  out_.push_back(':');
  if (indent_ > 0) out_.push_back(' ');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::PlainKey(std::string_view key) {
  assert(IsPlain(key) && "JsonWriter: PlainKey() text needs escaping");
  BeforeKey();
  out_.push_back('"');
  out_.append(key);
  out_.append(indent_ > 0 ? "\": " : "\":");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendQuoted(out_, value);
  return *this;
}

JsonWriter& JsonWriter::PlainString(std::string_view value) {
  assert(IsPlain(value) && "JsonWriter: PlainString() text needs escaping");
  BeforeValue();
  out_.push_back('"');
  out_.append(value);
  out_.push_back('"');
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out_.append(buf, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out_.append(buf, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_.append("null");
    return *this;
  }
  // The shortest form that reads back exactly; always valid JSON for finite values
  // ("1e+20", "-0", "0.1").
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out_.append(buf, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_.append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  out_.append(json);
  return *this;
}

void JsonWriter::AppendQuoted(std::string& out, std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* s = reinterpret_cast<const unsigned char*>(value.data());
  const size_t n = value.size();
  out.push_back('"');
  size_t run_start = 0;  // bytes [run_start, i) are copied verbatim in one append
  size_t i = 0;
  while (i < n) {
    const uint8_t cls = kByteClass[s[i]];
    if (cls == 0) {
      ++i;
      continue;
    }
    if (cls == 2) {
      size_t skip = 0;
      const size_t len = ValidUtf8Length(s + i, n - i, &skip);
      if (len != 0) {
        i += len;
        continue;
      }
      out.append(value.data() + run_start, i - run_start);
      out.append(kReplacement);
      i += skip;
      run_start = i;
      continue;
    }
    out.append(value.data() + run_start, i - run_start);
    const unsigned char c = s[i];
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default: {
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(esc, sizeof(esc));
      }
    }
    ++i;
    run_start = i;
  }
  out.append(value.data() + run_start, n - run_start);
  out.push_back('"');
}

}  // namespace kubestat
