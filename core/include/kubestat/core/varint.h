// LEB128 varints and zigzag signed integers: the compact binary forms of the store's scrape
// blobs and the windows' sketches, rollups and series dictionary.
#ifndef KUBESTAT_CORE_VARINT_H_
#define KUBESTAT_CORE_VARINT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kubestat {

// The most bytes a varint takes.
inline constexpr size_t kMaxVarintBytes = 10;

// Writes `v` at `dst`, which has room for kMaxVarintBytes; returns the end of what it wrote.
inline char* EncodeVarint(char* dst, uint64_t v) {
  while (v >= 0x80) {
    *dst++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *dst++ = static_cast<char>(v);
  return dst;
}

// Appends `v` to `out`.
inline void PutVarint(std::string* out, uint64_t v) {
  char buffer[kMaxVarintBytes];
  out->append(buffer, static_cast<size_t>(EncodeVarint(buffer, v) - buffer));
}

// The bytes PutVarint appends for `v` (1 to 10).
constexpr size_t VarintSize(uint64_t v) {
  size_t bytes = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++bytes;
  }
  return bytes;
}

// False on truncated or over-long input; `in` is advanced past the varint on success.
inline bool GetVarint(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    if (shift == 63 && byte > 1) return false;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

// Signed to unsigned so that small magnitudes of either sign stay short, and back.
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace kubestat

#endif  // KUBESTAT_CORE_VARINT_H_
