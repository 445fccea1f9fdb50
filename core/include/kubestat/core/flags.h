// Command-line flags for kubestat binaries.
//
// A FlagSet binds typed flags to fields of a component's options struct. The value a field
// holds when its flag is registered is the default shown by --help. Parse() accepts
//   --name=value   --name value   --bool   --no-bool   --bool=false   --   -h   --help
// (booleans take a value only with "=": true/false/1/0/t/f/yes/no, any case). A string
// list flag splits its value on commas; its first use replaces the default and later uses
// append. A scalar flag given twice keeps the last value. Durations use ParseDuration
// ("10s", "1m30s", "1d"). Arguments that are not flags, and every argument after "--",
// are returned as positional arguments.
//
// Errors are InvalidArgument values naming the flag:
//   unknown flag --metric-resolutoin
//   --metric-resolution: invalid duration "abc": expected a number
//   --port: missing value
// --help or -h anywhere makes Parse() return help_requested = true (nothing else is
// checked): main prints Usage() and exits 0.
//
// The FlagSet keeps pointers to the bound fields; they must outlive it. Registering a name
// twice, or a name that is not lower-case letters, digits and dashes, is a programming
// error (asserts). Not thread-safe; use it from main before starting threads.
#ifndef KUBESTAT_CORE_FLAGS_H_
#define KUBESTAT_CORE_FLAGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat {

struct ParsedFlags {
  // --help or -h was given.
  bool help_requested = false;
  // Arguments that are not flags, in order.
  std::vector<std::string> positional;
};

class FlagSet {
 public:
  // `program` is the binary's name, `description` one line saying what it does.
  FlagSet(std::string program, std::string description);

  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Names are given without dashes: "metric-resolution".
  void AddString(std::string_view name, std::string* target, std::string_view help);
  void AddInt64(std::string_view name, int64_t* target, std::string_view help);
  void AddDouble(std::string_view name, double* target, std::string_view help);
  void AddBool(std::string_view name, bool* target, std::string_view help);
  void AddDuration(std::string_view name, Duration* target, std::string_view help);
  void AddStringList(std::string_view name, std::vector<std::string>* target,
                     std::string_view help);

  // Parses argv[1..argc) (argv[0] is the program path and is skipped). Fields of flags
  // parsed before an error keep their new values.
  [[nodiscard]] absl::StatusOr<ParsedFlags> Parse(int argc, const char* const* argv);
  // The same for arguments without the program path.
  [[nodiscard]] absl::StatusOr<ParsedFlags> Parse(std::span<const std::string_view> args);

  // The --help text: program, description, then every flag sorted by name with its type,
  // default and help.
  std::string Usage() const;

 private:
  struct Flag {
    std::string type;  // "string", "int64", "double", "bool", "duration", "strings"
    std::string help;
    std::string default_value;  // as written in --help
    bool is_bool = false;
    // Applies a value; the error message names what is wrong (without the flag name).
    std::function<absl::Status(std::string_view)> set;
  };

  static Flag MakeFlag(std::string_view type, std::string_view help, std::string default_value,
                       bool is_bool = false);

  void Add(std::string_view name, Flag flag);

  std::string program_;
  std::string description_;
  std::map<std::string, Flag, std::less<>> flags_;
};

}  // namespace kubestat

#endif  // KUBESTAT_CORE_FLAGS_H_
