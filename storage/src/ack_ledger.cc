#include "kubestat/storage/internal/ack_ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "kubestat/storage/internal/keys.h"

namespace kubestat::storage {

namespace {

constexpr std::string_view kMagic("KSACK1\n\0", 8);
constexpr size_t kEntryBytes = 4 + 8 + 8 + 8;
// A marker larger than this is not one (2^20 nodes).
constexpr size_t kMaxMarkerBytes = kMagic.size() + 4 + (size_t{1} << 20) * kEntryBytes + 8;

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

absl::Status Errno(const char* what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat("store: cannot ", what, " ", path, ": ", std::strerror(errno)));
}

// Writes all of `bytes` to a new file at `path` and syncs it.
absl::Status WriteSynced(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create", path);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const absl::Status s = Errno("write", path);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd) != 0) {
    const absl::Status s = Errno("sync", path);
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return Errno("close", path);
  return absl::OkStatus();
}

}  // namespace

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open", dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno("sync", dir);
  return absl::OkStatus();
}

std::string EncodeAck(const Ack& ack) {
  std::string out;
  keys::PutU64(&out, ack.scrapes);
  keys::PutU64(&out, ack.samples);
  keys::PutI64(&out, ack.newest);
  return out;
}

bool DecodeAck(std::string_view bytes, Ack* ack) {
  if (bytes.size() != 24) return false;
  ack->scrapes = keys::GetU64(bytes);
  ack->samples = keys::GetU64(bytes.substr(8));
  ack->newest = keys::GetI64(bytes.substr(16));
  return true;
}

absl::StatusOr<AckTable> ReadAckMarker(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kMarkerName);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) {
    return absl::NotFoundError(absl::StrCat("store: no marker ", path));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  std::string bytes;
  char buffer[64 << 10];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof(buffer))) != 0 && bytes.size() <= kMaxMarkerBytes) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const absl::Status s = Errno("read", path);
      ::close(fd);
      return s;
    }
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const auto bad = [&path](const char* why) {
    return absl::DataLossError(absl::StrCat("store: the marker ", path, " ", why));
  };
  if (bytes.size() < kMagic.size() + 4 + 8 || bytes.size() > kMaxMarkerBytes) {
    return bad("has the wrong size");
  }
  const std::string_view view(bytes);
  if (view.substr(0, kMagic.size()) != kMagic) return bad("is not a kubestat marker");
  const std::string_view body = view.substr(0, view.size() - 8);
  if (Fnv1a(body) != keys::GetU64(view.substr(view.size() - 8))) {
    return bad("fails its checksum");
  }
  const uint32_t count = keys::GetU32(view.substr(kMagic.size()));
  if (body.size() != kMagic.size() + 4 + size_t{count} * kEntryBytes) {
    return bad("has the wrong size for its count");
  }
  AckTable table;
  table.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string_view entry = body.substr(kMagic.size() + 4 + size_t{i} * kEntryBytes);
    Ack ack;
    (void)DecodeAck(entry.substr(4, 24), &ack);
    table[keys::GetU32(entry)] = ack;
  }
  return table;
}

absl::Status WriteAckMarker(const std::string& dir, const AckTable& table) {
  std::string bytes(kMagic);
  bytes.reserve(kMagic.size() + 4 + table.size() * kEntryBytes + 8);
  keys::PutU32(&bytes, static_cast<uint32_t>(table.size()));
  for (const auto& [node, ack] : table) {
    keys::PutU32(&bytes, node);
    bytes += EncodeAck(ack);
  }
  keys::PutU64(&bytes, Fnv1a(bytes));
  const std::string path = absl::StrCat(dir, "/", kMarkerName);
  const std::string temporary = path + ".tmp";
  if (absl::Status s = WriteSynced(temporary, bytes); !s.ok()) {
    ::unlink(temporary.c_str());
    return s;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const absl::Status s = Errno("rename into place", temporary);
    ::unlink(temporary.c_str());
    return s;
  }
  return SyncDirectory(dir);
}

void AckLedger::Reset(AckTable stored) {
  std::lock_guard lock(mu_);
  acknowledged_ = stored;
  handed_out_ = std::move(stored);
  dirty_ = true;
}

std::vector<std::pair<NodeId, Ack>> AckLedger::Next(std::span<const ScrapeStamp> stamps) {
  std::vector<std::pair<NodeId, Ack>> out;
  std::lock_guard lock(mu_);
  for (const ScrapeStamp& stamp : stamps) {
    Ack& ack = handed_out_[stamp.node];
    ack.scrapes += 1;
    ack.samples += stamp.samples;
    ack.newest = std::max(ack.newest, stamp.time);
    auto it = std::find_if(out.begin(), out.end(),
                           [&stamp](const auto& entry) { return entry.first == stamp.node; });
    if (it == out.end()) {
      out.emplace_back(stamp.node, ack);
    } else {
      it->second = ack;
    }
  }
  return out;
}

void AckLedger::Acknowledge(std::span<const std::pair<NodeId, Ack>> acks) {
  std::lock_guard lock(mu_);
  for (const auto& [node, ack] : acks) {
    Ack& known = acknowledged_[node];
    // Totals only grow: a batch of the backlog written late never takes them back.
    if (ack.scrapes > known.scrapes) known = ack;
  }
  dirty_ = dirty_ || !acks.empty();
}

std::vector<NodeId> AckLedger::ForgetOlderThan(int64_t cutoff_ns) {
  std::vector<NodeId> forgotten;
  std::lock_guard lock(mu_);
  for (auto it = handed_out_.begin(); it != handed_out_.end();) {
    if (it->second.newest >= cutoff_ns) {
      ++it;
      continue;
    }
    forgotten.push_back(it->first);
    acknowledged_.erase(it->first);
    it = handed_out_.erase(it);
  }
  dirty_ = dirty_ || !forgotten.empty();
  return forgotten;
}

absl::Status AckLedger::Persist(std::chrono::steady_clock::duration interval, bool force) {
  std::unique_lock persisting(persist_mu_, std::defer_lock);
  if (force) {
    persisting.lock();
  } else if (!persisting.try_lock()) {
    return absl::OkStatus();
  }
  AckTable snapshot;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!dirty_ || (!force && now - persisted_at_ < interval)) return absl::OkStatus();
    snapshot = acknowledged_;
    dirty_ = false;
    persisted_at_ = now;
  }
  absl::Status s = WriteAckMarker(dir_, snapshot);
  if (!s.ok()) {
    std::lock_guard lock(mu_);
    dirty_ = true;
  }
  return s;
}

}  // namespace kubestat::storage
