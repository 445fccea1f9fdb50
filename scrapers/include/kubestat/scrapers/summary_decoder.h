// Decoding the kubelet's GET /stats/summary (JSON, statsapi v1alpha1 `Summary`) into a
// NodeScrape.
//
// What is read: node {nodeName, startTime, cpu, memory, swap, systemContainers[]} and
// pods[] {podRef {name, namespace, uid}, startTime, containers[] {name, startTime, cpu,
// memory, swap}, cpu, memory, swap}, where cpu is {time, usageNanoCores,
// usageCoreNanoSeconds}, memory is {time, workingSetBytes} and swap is {time,
// swapUsageBytes}. Every other field (network, fs, rootfs, logs, volume, ephemeral-storage,
// process_stats, psi, io, accelerators, userDefinedMetrics, …) is skipped, whatever its
// shape. Field order does not matter. A number may be written as an integer or with a
// fraction/exponent; fractional values are rounded to the nearest integer.
//
// Errors: the JSON is not well formed (the blocks kubestat skips are checked only for
// balanced brackets and well-formed strings, which keeps skipping them cheap), the top level or
// `node` is not an object, or `node.nodeName` is missing or empty → InvalidArgument with a message
// naming the problem. Anything wrong inside one object only drops that value and is counted in
// NodeScrape::issues: a negative, non-finite or >2^63 number (kAbsurdValue), a value of the
// wrong JSON type (kWrongType), an unparseable time (kBadTimestamp; for a cpu/memory block,
// its `time` being unusable drops the whole block), a pod without podRef name/namespace or
// a container without a name (kMissingField; that pod/container is dropped), and the same
// pod or container twice (kDuplicate; the first is kept). null is the same as absent.
//
// Buffers: the JSON parser reads up to kSummaryPadding bytes past the end of the
// document. DecodeSummary(std::string_view) therefore copies the input into a padded
// buffer; DecodeSummaryInPlace decodes a std::string without that copy when its capacity
// already leaves room (reserve size + kSummaryPadding when filling it from the network).
//
// Thread-safety: both functions may be called concurrently from any threads (each thread
// keeps its own parser).
#ifndef KUBESTAT_SCRAPERS_SUMMARY_DECODER_H_
#define KUBESTAT_SCRAPERS_SUMMARY_DECODER_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/scrapers/node_scrape.h"

namespace kubestat::scrapers {

// Bytes of spare capacity DecodeSummaryInPlace needs after the JSON to avoid a copy.
inline constexpr size_t kSummaryPadding = 64;

// Decodes a /stats/summary body. Copies `json` once into a padded buffer.
[[nodiscard]] absl::StatusOr<NodeScrape> DecodeSummary(std::string_view json);

// Decodes the /stats/summary body held in *json. When json->capacity() - json->size() <
// kSummaryPadding, reserves more capacity first (one reallocation); otherwise reads the
// string's own buffer. The content (size and bytes) of *json is never changed.
[[nodiscard]] absl::StatusOr<NodeScrape> DecodeSummaryInPlace(std::string* json);

// As above, into *out, whose storage (its pods, containers and their strings, from an
// earlier scrape of any node) is reused: *out is overwritten whole, as if it were a new
// NodeScrape. On error *out holds part of the payload (or nothing); use it only to decode
// into again.
[[nodiscard]] absl::Status DecodeSummaryInPlace(std::string* json, NodeScrape* out);

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_SUMMARY_DECODER_H_
