#include "kubestat/core/flags.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <utility>

#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"

namespace kubestat {
namespace {

// A value as --help and error messages show it: JSON-quoted, so control bytes stay visible.
std::string Quote(std::string_view value) {
  std::string out;
  JsonWriter::AppendQuoted(out, value);
  return out;
}

absl::Status InvalidValue(std::string_view type, std::string_view value) {
  return absl::InvalidArgumentError("invalid " + std::string(type) + " " + Quote(value));
}

bool ParseBool(std::string_view value, bool* out) {
  std::string lower(value);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower == "true" || lower == "1" || lower == "t" || lower == "yes") {
    *out = true;
    return true;
  }
  if (lower == "false" || lower == "0" || lower == "f" || lower == "no") {
    *out = false;
    return true;
  }
  return false;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += items[i];
  }
  return out;
}

std::vector<std::string> SplitList(std::string_view value) {
  std::vector<std::string> items;
  if (value.empty()) return items;
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    items.emplace_back(value.substr(start, comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

std::string FormatDouble(double v) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, result.ptr);
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.front() == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// Indents every line of `text` by `indent`.
void AppendIndented(std::string& out, std::string_view text, std::string_view indent) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t nl = text.find('\n', start);
    out += indent;
    out += text.substr(start, nl - start);
    out.push_back('\n');
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

}  // namespace

FlagSet::Flag FlagSet::MakeFlag(std::string_view type, std::string_view help,
                                std::string default_value, bool is_bool) {
  Flag flag;
  flag.type = type;
  flag.help = help;
  flag.default_value = std::move(default_value);
  flag.is_bool = is_bool;
  return flag;
}

FlagSet::FlagSet(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

void FlagSet::Add(std::string_view name, Flag flag) {
  assert(ValidName(name) && "flag names are lower-case letters, digits and dashes");
  assert(name != "help" && "--help is built in");
  const bool inserted = flags_.emplace(std::string(name), std::move(flag)).second;
  assert(inserted && "flag registered twice");
  (void)inserted;
}

void FlagSet::AddString(std::string_view name, std::string* target, std::string_view help) {
  Flag flag = MakeFlag("string", help, Quote(*target));
  flag.set = [target](std::string_view v) {
    target->assign(v);
    return absl::OkStatus();
  };
  Add(name, std::move(flag));
}

void FlagSet::AddInt64(std::string_view name, int64_t* target, std::string_view help) {
  Flag flag = MakeFlag("int64", help, std::to_string(*target));
  flag.set = [target](std::string_view v) {
    std::string_view digits = v;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) {
      return ec == std::errc::result_out_of_range
                 ? absl::InvalidArgumentError("int64 out of range " + Quote(v))
                 : InvalidValue("int64", v);
    }
    *target = value;
    return absl::OkStatus();
  };
  Add(name, std::move(flag));
}

void FlagSet::AddDouble(std::string_view name, double* target, std::string_view help) {
  Flag flag = MakeFlag("double", help, FormatDouble(*target));
  flag.set = [target](std::string_view v) {
    std::string_view digits = v;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    double value = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() ||
        !std::isfinite(value)) {
      return InvalidValue("number", v);
    }
    *target = value;
    return absl::OkStatus();
  };
  Add(name, std::move(flag));
}

void FlagSet::AddBool(std::string_view name, bool* target, std::string_view help) {
  Flag flag = MakeFlag("bool", help, *target ? "true" : "false", /*is_bool=*/true);
  flag.set = [target](std::string_view v) {
    if (!ParseBool(v, target)) return InvalidValue("bool", v);
    return absl::OkStatus();
  };
  Add(name, std::move(flag));
}

void FlagSet::AddDuration(std::string_view name, Duration* target, std::string_view help) {
  Flag flag = MakeFlag("duration", help, FormatDuration(*target));
  flag.set = [target](std::string_view v) -> absl::Status {
    absl::StatusOr<Duration> d = ParseDuration(v);
    if (!d.ok()) return d.status();  // 'invalid duration "abc": …'
    *target = *d;
    return absl::OkStatus();
  };
  Add(name, std::move(flag));
}

void FlagSet::AddStringList(std::string_view name, std::vector<std::string>* target,
                            std::string_view help) {
  Flag flag = MakeFlag("strings", help, Quote(JoinList(*target)));
  // The first use replaces the default; later uses append.
  flag.set = [target, first = true](std::string_view v) mutable {
    if (first) target->clear();
    first = false;
    for (std::string& item : SplitList(v)) target->push_back(std::move(item));
    return absl::OkStatus();
  };
  Add(name, std::move(flag));
}

absl::StatusOr<ParsedFlags> FlagSet::Parse(int argc, const char* const* argv) {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(std::span<const std::string_view>(args));
}

absl::StatusOr<ParsedFlags> FlagSet::Parse(std::span<const std::string_view> args) {
  ParsedFlags parsed;
  // --help wins over everything, including errors in other flags.
  for (std::string_view arg : args) {
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help" || arg == "-help") {
      parsed.help_requested = true;
      return parsed;
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--") {
      for (size_t j = i + 1; j < args.size(); ++j) parsed.positional.emplace_back(args[j]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.emplace_back(arg);
      continue;
    }
    if (arg[1] != '-') {
      return absl::InvalidArgumentError("unknown flag " + Quote(arg) +
                                        " (flags are written --name)");
    }
    std::string_view body = arg.substr(2);
    std::string_view value;
    const size_t eq = body.find('=');
    const bool has_value = eq != std::string_view::npos;
    if (has_value) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const std::string shown = "--" + std::string(body);

    auto it = flags_.find(body);
    if (it == flags_.end() && body.starts_with("no-")) {
      auto negated = flags_.find(body.substr(3));
      if (negated != flags_.end() && negated->second.is_bool) {
        if (has_value) return absl::InvalidArgumentError(shown + ": takes no value");
        absl::Status status = negated->second.set("false");
        if (!status.ok()) return status;
        continue;
      }
    }
    if (it == flags_.end()) {
      return absl::InvalidArgumentError("unknown flag " + (ValidName(body) ? shown : Quote(arg)));
    }
    Flag& flag = it->second;
    if (!has_value) {
      if (flag.is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(shown + ": missing value");
      }
    }
    absl::Status status = flag.set(value);
    if (!status.ok()) {
      return absl::InvalidArgumentError(shown + ": " + std::string(status.message()));
    }
  }
  return parsed;
}

std::string FlagSet::Usage() const {
  std::string out = "Usage: " + program_ + " [flags]\n";
  if (!description_.empty()) out += "\n" + description_ + "\n";
  out += "\nFlags:\n";
  out += "  -h, --help\n        Show this help and exit.\n";
  for (const auto& [name, flag] : flags_) {  // std::map: sorted by name
    out += "  --" + name + " " + flag.type + "\n";
    std::string text = flag.help;
    if (!text.empty()) text.push_back(' ');
    text += "(default " + flag.default_value + ")";
    if (flag.is_bool) text += " Negate with --no-" + name + ".";
    AppendIndented(out, text, "        ");
  }
  return out;
}

}  // namespace kubestat
