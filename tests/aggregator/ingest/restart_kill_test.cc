// Crash safety of the whole pipeline: a real process ingesting into RocksDB is SIGKILLed in
// the middle of its stream; a new process rebuilds from the store, and every window it
// reports equals an in-process pipeline fed exactly the acknowledged scrapes (or those plus
// the one in flight when the kill came).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/testing/aggregator/restart_stream.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

std::string DriverPath() {
  if (const char* env = std::getenv("KUBESTAT_RESTART_DRIVER")) return env;
  return KUBESTAT_RESTART_DRIVER_PATH;  // set by tests/aggregator/CMakeLists.txt
}

struct Child {
  pid_t pid = -1;
  int out = -1;
  int err = -1;
};

Child Spawn(const std::vector<std::string>& args) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) std::abort();
  Child child;
  child.pid = fork();
  if (child.pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  child.out = out[0];
  child.err = err[0];
  return child;
}

std::string ReadAll(int fd) {
  std::string data;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) data.append(buf, static_cast<size_t>(n));
  close(fd);
  return data;
}

struct Result {
  int status = 0;
  std::string out, err;
};

Result RunToEnd(const std::vector<std::string>& args) {
  Child child = Spawn(args);
  Result r;
  r.out = ReadAll(child.out);
  r.err = ReadAll(child.err);
  waitpid(child.pid, &r.status, 0);
  return r;
}

struct ExpectedDumps {
  std::string live;     // the pipeline that ingested the scrapes
  std::string rebuilt;  // a pipeline rebuilt from that pipeline's clean store
};

// The dumps of an in-process pipeline fed scrapes [0, count) of the stream.
ExpectedDumps Expected(uint64_t count) {
  ::kubestat::testing::TempDir dir;
  storage::StoreOptions options;
  options.dir = dir.File("db");
  auto store = storage::Store::Open(options);
  EXPECT_TRUE(store.ok());
  IngestOptions ingest_options;
  ingest_options.shards = 2;  // a different sharding must not matter
  FakeClock clock;
  auto ingestor = Ingestor::Create(ingest_options, store->get(), &clock);
  EXPECT_TRUE(ingestor.ok());
  EXPECT_TRUE((*ingestor)->Rebuild().ok());
  testing::RestartStream stream;
  for (uint64_t i = 0; i < count; ++i) EXPECT_TRUE((*ingestor)->Ingest(stream.Next(i)).ok());
  ExpectedDumps dumps;
  dumps.live = testing::DumpWindows(**ingestor);
  auto rebuilt = Ingestor::Create(ingest_options, store->get(), &clock);
  EXPECT_TRUE(rebuilt.ok());
  EXPECT_TRUE((*rebuilt)->Rebuild().ok());
  dumps.rebuilt = testing::DumpWindows(**rebuilt);
  return dumps;
}

TEST(RestartTest, KillDuringIngestLosesNoAcknowledgedScrape) {
  const std::string driver = DriverPath();
  ASSERT_TRUE(std::filesystem::exists(driver)) << "missing " << driver;
  ::kubestat::testing::TempDir dir;
  const std::string db = dir.File("db");
  // 3 nodes every 30 s: 900 scrapes span 2.5 h (rollups are written at every hour).
  Child child = Spawn({driver, "ingest", db, "1200"});
  std::string buffer;
  std::optional<uint64_t> acked;
  char chunk[4096];
  bool killed = false;
  while (true) {
    const ssize_t n = read(child.out, chunk, sizeof chunk);
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      const std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      if (line.rfind("ACK ", 0) == 0) acked = std::stoull(line.substr(4));
    }
    if (!killed && acked && *acked >= 900) {
      kill(child.pid, SIGKILL);
      killed = true;  // keep reading: lines already written were acknowledged
    }
  }
  close(child.out);
  const std::string err = ReadAll(child.err);
  int status = 0;
  waitpid(child.pid, &status, 0);
  ASSERT_TRUE(killed) << "the driver ended before the kill: " << err;
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_TRUE(acked);

  Result dump = RunToEnd({driver, "dump", db});
  ASSERT_TRUE(WIFEXITED(dump.status) && WEXITSTATUS(dump.status) == 0) << dump.err;
  ASSERT_FALSE(dump.out.empty());
  ExpectedDumps expected = Expected(*acked + 1);
  if (dump.out != expected.rebuilt) {
    // The scrape in flight may have committed without its ACK being printed.
    expected = Expected(*acked + 2);
  }
  // Exactly what a clean store holding the acknowledged scrapes rebuilds to: nothing
  // acknowledged was lost, nothing half-written appeared.
  EXPECT_EQ(dump.out, expected.rebuilt) << "acked through " << *acked;
  // And what the pipeline that ingested them reported live, every statistic of every window.
  EXPECT_EQ(dump.out, expected.live);
}

TEST(RestartTest, CorruptDatabaseIsAClearErrorAndANonZeroExit) {
  const std::string driver = DriverPath();
  ASSERT_TRUE(std::filesystem::exists(driver)) << "missing " << driver;
  ::kubestat::testing::TempDir dir;
  const std::string db = dir.File("db");
  Result ingest = RunToEnd({driver, "ingest", db, "30"});
  ASSERT_TRUE(WIFEXITED(ingest.status) && WEXITSTATUS(ingest.status) == 0) << ingest.err;
  std::ofstream(db + "/CURRENT", std::ios::trunc) << "garbage\n";
  for (int attempt = 0; attempt < 3; ++attempt) {  // as a restart loop would
    Result dump = RunToEnd({driver, "dump", db});
    ASSERT_TRUE(WIFEXITED(dump.status)) << "crashed: " << dump.err;
    EXPECT_EQ(WEXITSTATUS(dump.status), 2);
    EXPECT_THAT(dump.err, ::testing::HasSubstr(db));
  }
}

}  // namespace
}  // namespace kubestat::aggregator
