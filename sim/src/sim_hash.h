// Seeded hashing for the model: every random choice is a hash of its coordinates.
#ifndef KUBESTAT_SIM_SRC_SIM_HASH_H_
#define KUBESTAT_SIM_SRC_SIM_HASH_H_

#include <cstdint>
#include <string_view>

namespace kubestat::sim {

// The splitmix64 finalizer: a bijection on 64-bit values with good avalanche.
inline uint64_t Finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t Mix(uint64_t a) { return Finalize(a + 0x9e3779b97f4a7c15ULL); }

template <typename... Rest>
uint64_t Mix(uint64_t a, uint64_t b, Rest... rest) {
  return Mix(Finalize(a + 0x9e3779b97f4a7c15ULL) ^ b, static_cast<uint64_t>(rest)...);
}

inline uint64_t HashString(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then finalized
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return Finalize(h);
}

// Uniform in [0, 1).
inline double Unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_SIM_HASH_H_
