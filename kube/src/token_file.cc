#include "kubestat/kube/token_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::kube {
namespace {

// One CSV record and the line it starts on.
struct Record {
  std::vector<std::string> fields;
  int line = 0;
};

// RFC 4180 as Go's encoding/csv reads it (no lazy quotes, no comments, no trimming).
absl::StatusOr<std::vector<Record>> ParseCsv(std::string_view content, std::string_view source) {
  std::vector<Record> records;
  size_t i = 0;
  int line = 1;
  auto error = [&](int at, std::string_view what) {
    return absl::InvalidArgumentError(StrCat("token file ", source, ": line ", at, ": ", what));
  };
  while (i < content.size()) {
    // Blank lines are skipped.
    if (content[i] == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (content[i] == '\r' && i + 1 < content.size() && content[i + 1] == '\n') {
      ++line;
      i += 2;
      continue;
    }
    Record record;
    record.line = line;
    while (true) {
      std::string field;
      if (i < content.size() && content[i] == '"') {
        ++i;
        while (true) {
          if (i >= content.size()) return error(record.line, "quoted field is not closed");
          const char c = content[i];
          if (c == '"') {
            if (i + 1 < content.size() && content[i + 1] == '"') {
              field.push_back('"');
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (c == '\r' && i + 1 < content.size() && content[i + 1] == '\n') {
            ++i;
            continue;
          }
          if (c == '\n') ++line;
          field.push_back(c);
          ++i;
        }
        if (i < content.size() && content[i] != ',' && content[i] != '\n' &&
            !(content[i] == '\r' && i + 1 < content.size() && content[i + 1] == '\n')) {
          return error(line, "extraneous or missing \" in quoted field");
        }
      } else {
        while (i < content.size() && content[i] != ',' && content[i] != '\n' &&
               !(content[i] == '\r' && i + 1 < content.size() && content[i + 1] == '\n')) {
          if (content[i] == '"') return error(line, "bare \" in non-quoted field");
          field.push_back(content[i]);
          ++i;
        }
      }
      record.fields.push_back(std::move(field));
      if (i < content.size() && content[i] == ',') {
        ++i;
        continue;
      }
      // End of record: newline or end of input.
      if (i < content.size()) {
        i += content[i] == '\r' ? 2 : 1;
        ++line;
      }
      break;
    }
    records.push_back(std::move(record));
  }
  return records;
}

std::vector<std::string> SplitGroups(std::string_view text) {
  std::vector<std::string> groups;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    if (comma > start) groups.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return groups;
}

absl::Status ErrnoStatus(int error, std::string_view what, std::string_view path) {
  const std::string message = StrCat(what, " ", path, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

}  // namespace

absl::StatusOr<StaticTokens> ParseTokenAuthFile(std::string_view content, std::string_view source) {
  absl::StatusOr<std::vector<Record>> records = ParseCsv(content, source);
  if (!records.ok()) return records.status();
  StaticTokens tokens;
  for (Record& record : *records) {
    if (record.fields.size() < 3) {
      return absl::InvalidArgumentError(
          StrCat("token file ", source, ": line ", record.line,
                 ": must have at least 3 columns (token, user name, user uid), found ",
                 record.fields.size()));
    }
    if (record.fields[0].empty()) {
      KLOG(WARNING) << "token file " << source << ": line " << record.line
                    << ": empty token, record skipped";
      continue;
    }
    if (record.fields[1].empty()) {
      return absl::InvalidArgumentError(
          StrCat("token file ", source, ": line ", record.line, ": empty user name"));
    }
    UserInfo user;
    user.name = std::move(record.fields[1]);
    user.uid = std::move(record.fields[2]);
    if (record.fields.size() >= 4) user.groups = SplitGroups(record.fields[3]);
    tokens[std::move(record.fields[0])] = std::move(user);
  }
  return tokens;
}

TokenAuthFile::TokenAuthFile(std::string path, const Clock& clock, Duration check_interval)
    : path_(std::move(path)), clock_(clock), check_interval_(check_interval) {}

absl::StatusOr<std::unique_ptr<TokenAuthFile>> TokenAuthFile::Open(std::string path,
                                                                   const Clock& clock,
                                                                   Duration check_interval) {
  std::unique_ptr<TokenAuthFile> file(new TokenAuthFile(std::move(path), clock, check_interval));
  std::lock_guard<std::mutex> lock(file->mu_);
  if (absl::Status status = file->ReloadIfChanged(); !status.ok()) return status;
  file->last_check_ = clock.MonotonicNow();
  return file;
}

absl::Status TokenAuthFile::ReloadIfChanged() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return ErrnoStatus(errno, "token file", path_);
  FileVersion version{static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
                      st.st_mtim};
  if (tokens_ && version.inode == version_.inode && version.size == version_.size &&
      version.mtime.tv_sec == version_.mtime.tv_sec &&
      version.mtime.tv_nsec == version_.mtime.tv_nsec) {
    return absl::OkStatus();
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return ErrnoStatus(errno, "cannot open token file", path_);
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return absl::InternalError(StrCat("cannot read token file ", path_));
  absl::StatusOr<StaticTokens> tokens = ParseTokenAuthFile(content.str(), path_);
  if (!tokens.ok()) return tokens.status();
  const bool reloaded = tokens_ != nullptr;
  tokens_ = std::make_shared<const StaticTokens>(std::move(*tokens));
  version_ = version;
  if (reloaded)
    KLOG(INFO) << "token file " << path_ << " reloaded: " << tokens_->size() << " tokens";
  return absl::OkStatus();
}

std::optional<UserInfo> TokenAuthFile::Lookup(std::string_view token) {
  std::shared_ptr<const StaticTokens> tokens;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Timestamp now = clock_.MonotonicNow();
    if (now - last_check_ >= check_interval_) {
      last_check_ = now;
      if (absl::Status status = ReloadIfChanged(); !status.ok()) {
        KLOG(WARNING) << "keeping the previous tokens: " << status.message();
      }
    }
    tokens = tokens_;
  }
  auto it = tokens->find(std::string(token));
  if (it == tokens->end()) return std::nullopt;
  return it->second;
}

}  // namespace kubestat::kube
