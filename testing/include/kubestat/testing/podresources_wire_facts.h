// The kubelet podresources v1 API's messages as ../shared/fixtures/podresources-v1-wire.md
// states them, read from that file in place: each message's fields with their numbers and
// types, for tests that hold an encoder or a decoder against the facts rather than against
// another copy of the .proto.
#ifndef KUBESTAT_TESTING_PODRESOURCES_WIRE_FACTS_H_
#define KUBESTAT_TESTING_PODRESOURCES_WIRE_FACTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kubestat::testing {

// One field line of the fixture, "- `cpu_ids` = 2 : repeated int64".
struct WireFieldFact {
  std::string name;  // "cpu_ids"
  int number = 0;    // 2
  std::string type;  // "int64", "string", "uint64", or a message name ("ContainerDevices")
  bool repeated = false;
  bool optional = false;  // proto3 `optional`

  // The wire type a proto3 encoder writes: 0 (varint) for int64/uint64, 2 (length-delimited)
  // for strings, messages and packed repeated scalars.
  int WireType() const;
  // Scalars (int64, uint64, string) are not messages.
  bool IsMessage() const;
};

// Every "### <Message>" of the fixture's "## Messages" section, with its fields in the order
// written ("(no fields)" gives an empty list; the tombstoned "field 1" of DynamicResource is
// left out).
using WireFacts = std::map<std::string, std::vector<WireFieldFact>>;

// Reads the facts from the text of podresources-v1-wire.md.
WireFacts ParseWireFacts(const std::string& markdown);

// The field `number` of `message`, or std::nullopt.
std::optional<WireFieldFact> FindField(const WireFacts& facts, const std::string& message,
                                       int number);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_PODRESOURCES_WIRE_FACTS_H_
