// The protobuf wire format by hand, for encoders that write a message's bytes straight into
// their output instead of building generated message objects: field tags, varint fields and
// length-delimited fields appended to a std::string, and the bytes each takes, so that a
// nested message's length is written before its fields without building or copying it.
//
// Fields are written as libprotobuf writes a proto2 field that is set: a varint field is its
// tag and the value (a negative int64 takes ten bytes, as does a negative int32, which is
// sign-extended); a string, bytes or message field is its tag, its length and its bytes,
// even when it is empty. Leaving out a field that is not set, and writing fields in number
// order, is the caller's part.
#ifndef KUBESTAT_METRICS_API_SRC_PROTOBUF_WIRE_H_
#define KUBESTAT_METRICS_API_SRC_PROTOBUF_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kubestat/core/varint.h"

namespace kubestat::metrics_api::internal {

enum class WireType : uint32_t {
  kVarint = 0,           // int32, int64, uint32, uint64, bool, enum
  kLengthDelimited = 2,  // string, bytes, messages (and map entries, which are messages)
};

// A field's key: its number and wire type.
constexpr uint64_t FieldTag(uint32_t number, WireType type) {
  return (uint64_t{number} << 3) | static_cast<uint32_t>(type);
}

// Bytes of an int64 (or int32) field holding `value`.
constexpr size_t Int64FieldSize(uint32_t number, int64_t value) {
  return VarintSize(FieldTag(number, WireType::kVarint)) + VarintSize(static_cast<uint64_t>(value));
}

// Bytes of a string, bytes or message field whose contents take `length` bytes.
constexpr size_t LengthDelimitedSize(uint32_t number, size_t length) {
  return VarintSize(FieldTag(number, WireType::kLengthDelimited)) + VarintSize(length) + length;
}

// A field's tag and one more varint (its value, or its length) in one append: appending a
// field's few bytes one by one cost a tenth of a large list's rendering.
inline void PutTagAndVarint(std::string* out, uint64_t tag, uint64_t v) {
  char buffer[2 * kMaxVarintBytes];
  const char* end = EncodeVarint(EncodeVarint(buffer, tag), v);
  out->append(buffer, static_cast<size_t>(end - buffer));
}

inline void PutInt64Field(std::string* out, uint32_t number, int64_t value) {
  PutTagAndVarint(out, FieldTag(number, WireType::kVarint), static_cast<uint64_t>(value));
}

// The tag and length of a length-delimited field; its `length` bytes must follow.
inline void PutLengthPrefix(std::string* out, uint32_t number, size_t length) {
  PutTagAndVarint(out, FieldTag(number, WireType::kLengthDelimited), length);
}

inline void PutStringField(std::string* out, uint32_t number, std::string_view bytes) {
  PutLengthPrefix(out, number, bytes.size());
  out->append(bytes);
}

}  // namespace kubestat::metrics_api::internal

#endif  // KUBESTAT_METRICS_API_SRC_PROTOBUF_WIRE_H_
