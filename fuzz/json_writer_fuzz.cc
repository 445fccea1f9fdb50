// Writes arbitrary bytes as a JSON key and string value, in compact and pretty form. The
// output must always be valid JSON (checked by simdjson), and input that is valid UTF-8
// must read back byte for byte.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kubestat/core/json_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static simdjson::dom::parser parser;
  const bool valid_utf8 = simdjson::validate_utf8(bytes.data(), bytes.size());
  for (int indent : {0, 2}) {
    kubestat::JsonWriter w(indent);
    w.BeginObject().Member(bytes, bytes).Key("n").BeginArray().String(bytes).EndArray();
    w.EndObject();
    simdjson::dom::element root;
    if (parser.parse(w.str()).get(root) != simdjson::SUCCESS) __builtin_trap();
    simdjson::dom::object obj;
    if (root.get_object().get(obj) != simdjson::SUCCESS || obj.size() != 2) __builtin_trap();
    if (valid_utf8) {
      const simdjson::dom::key_value_pair first = *obj.begin();
      std::string_view value;
      if (first.value.get_string().get(value) != simdjson::SUCCESS) __builtin_trap();
      if (first.key != bytes || value != bytes) __builtin_trap();
    }
  }
  return 0;
}
