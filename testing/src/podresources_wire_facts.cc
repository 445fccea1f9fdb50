#include "kubestat/testing/podresources_wire_facts.h"

#include <regex>
#include <sstream>

namespace kubestat::testing {

int WireFieldFact::WireType() const {
  if (repeated && (type == "int64" || type == "uint64")) return 2;  // packed
  return (type == "int64" || type == "uint64") ? 0 : 2;
}

bool WireFieldFact::IsMessage() const {
  return type != "int64" && type != "uint64" && type != "string";
}

WireFacts ParseWireFacts(const std::string& markdown) {
  static const std::regex kField(
      R"re(^- `([A-Za-z_]+)` = ([0-9]+) : (repeated |optional )?([A-Za-z0-9_]+))re");
  static const std::regex kMessage(R"re(^### ([A-Za-z0-9_]+)\s*$)re");
  WireFacts facts;
  std::istringstream in(markdown);
  std::string line;
  bool in_messages = false;
  std::string message;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_messages = line.rfind("## Messages", 0) == 0;
      message.clear();
      continue;
    }
    if (!in_messages) continue;
    std::smatch m;
    if (std::regex_match(line, m, kMessage)) {
      message = m[1];
      facts[message];
      continue;
    }
    if (message.empty() || !std::regex_search(line, m, kField)) continue;
    WireFieldFact field;
    field.name = m[1];
    field.number = std::stoi(m[2]);
    field.repeated = m[3] == "repeated ";
    field.optional = m[3] == "optional ";
    field.type = m[4];
    facts[message].push_back(std::move(field));
  }
  return facts;
}

std::optional<WireFieldFact> FindField(const WireFacts& facts, const std::string& message,
                                       int number) {
  auto it = facts.find(message);
  if (it == facts.end()) return std::nullopt;
  for (const WireFieldFact& field : it->second) {
    if (field.number == number) return field;
  }
  return std::nullopt;
}

}  // namespace kubestat::testing
