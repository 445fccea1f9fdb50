// kubestat_restart_driver: ingests the restart test's stream through the real pipeline into
// a RocksDB directory, or rebuilds from one and prints every window.
//
//   kubestat_restart_driver ingest <dir> <count>   prints "ACK <i>" after scrape i commits
//   kubestat_restart_driver dump <dir>             prints DumpWindows after the rebuild
//
// Exit status: 0 on success, 2 when the store cannot be opened or rebuilt (the message on
// stderr names the directory), 3 on an ingest error.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/aggregator/restart_stream.h"

int main(int argc, char** argv) {
  using kubestat::aggregator::Ingestor;
  if (argc < 3 || (std::string(argv[1]) != "ingest" && std::string(argv[1]) != "dump") ||
      (std::string(argv[1]) == "ingest" && argc < 4)) {
    std::cerr << "usage: " << argv[0] << " ingest <dir> <count> | dump <dir>\n";
    return 1;
  }
  kubestat::storage::StoreOptions options;
  options.dir = argv[2];
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 4 << 20;
  auto store = kubestat::storage::Store::Open(options);
  if (!store.ok()) {
    std::cerr << "error: " << store.status().message() << "\n";
    return 2;
  }
  kubestat::aggregator::IngestOptions ingest_options;
  ingest_options.shards = 4;
  auto ingestor = Ingestor::Create(ingest_options, store->get(), &kubestat::RealClock::Get());
  if (!ingestor.ok()) {
    std::cerr << "error: " << ingestor.status().message() << "\n";
    return 2;
  }
  if (absl::Status s = (*ingestor)->Rebuild(); !s.ok()) {
    std::cerr << "error: rebuild: " << s.message() << "\n";
    return 2;
  }
  if (std::string(argv[1]) == "dump") {
    std::cout << kubestat::aggregator::testing::DumpWindows(**ingestor) << std::flush;
    return 0;
  }
  const uint64_t count = std::strtoull(argv[3], nullptr, 10);
  kubestat::aggregator::testing::RestartStream stream;
  for (uint64_t i = 0; i < count; ++i) {
    if (absl::Status s = (*ingestor)->Ingest(stream.Next(i)); !s.ok()) {
      std::cerr << "error: scrape " << i << ": " << s.message() << "\n";
      return 3;
    }
    std::printf("ACK %llu\n", static_cast<unsigned long long>(i));
    std::fflush(stdout);
  }
  return 0;
}
