// Dependencies point one way: core ← apimachinery ← http, kube, metrics_api, windows, limits
// ← discovery ← scrapers, storage ← aggregator, whose rooms run ingest ← query ← frontends ←
// its wiring; the bridge, the apiserver and the node agent use core, apimachinery, http, kube,
// metrics_api and proto only; the simulator uses core, apimachinery and the HTTP server only
// (it must not share the client, decoders or renderers with what it tests). This test reads
// every source file's `#include "kubestat/<folder>/..."` lines and fails on one that points
// the wrong way, on one of another folder's internal/ headers (only its own folder and the
// tests include those), and on a folder or room of the tree it has no rule for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace kubestat {
namespace {

namespace fs = std::filesystem;

// What each folder's code may include, by the folder of the included header. Generated
// protos are included as "kubestat/v1/..." and the podresources client as
// "kubestat/podresources/...": both are proto/.
const std::map<std::string, std::set<std::string>>& Allowed() {
  static const auto* allowed = new std::map<std::string, std::set<std::string>>{
      {"core", {"core"}},
      {"apimachinery", {"core", "apimachinery"}},
      {"proto", {"core", "proto"}},
      {"http", {"core", "apimachinery", "http"}},
      {"kube", {"core", "apimachinery", "http", "kube"}},
      {"metrics_api", {"core", "apimachinery", "metrics_api", "proto"}},
      {"windows", {"core", "windows"}},
      {"limits", {"core", "apimachinery", "limits"}},
      {"storage", {"core", "windows", "storage"}},
      {"discovery", {"core", "apimachinery", "http", "kube", "limits", "discovery"}},
      {"scrapers", {"core", "apimachinery", "http", "kube", "discovery", "scrapers"}},
      // The aggregator's rooms: ingest ← query ← frontends ← the aggregator's wiring.
      {"aggregator/ingest",
       {"core", "apimachinery", "windows", "limits", "storage", "scrapers", "aggregator/ingest"}},
      {"aggregator/query",
       {"core", "apimachinery", "http", "kube", "metrics_api", "windows", "limits", "storage",
        "discovery", "scrapers", "proto", "aggregator/ingest", "aggregator/query"}},
      {"aggregator/frontends",
       {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "aggregator/query",
        "aggregator/frontends"}},
      {"aggregator",
       {"core", "apimachinery", "http", "kube", "metrics_api", "windows", "limits", "storage",
        "discovery", "scrapers", "proto", "aggregator/ingest", "aggregator/query",
        "aggregator/frontends", "aggregator"}},
      {"bridge", {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "bridge"}},
      {"apiserver", {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "apiserver"}},
      {"agent", {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "agent"}},
      {"sim", {"core", "apimachinery", "http", "sim"}},
  };
  return *allowed;
}

// The room (a rule's name) an included "kubestat/<dir>/<rest>" header lives in: a room inside a
// folder ("aggregator/query") where `rest` starts with one, else the folder.
std::string RoomOfInclude(const std::string& dir, const std::string& rest) {
  if (dir == "v1" || dir == "podresources") return "proto";
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    const std::string room = dir + "/" + rest.substr(0, slash);
    if (Allowed().contains(room)) return room;
  }
  return dir;
}

// The room a source file (relative to the root) belongs to: the longest rule name that is a
// folder it lies in.
std::string RoomOfFile(const std::string& relative) {
  std::string best;
  for (const auto& [room, allowed] : Allowed()) {
    if (relative.rfind(room + "/", 0) == 0 && room.size() > best.size()) best = room;
  }
  return best;
}

struct Violation {
  std::string file;
  int line;
  std::string include;
};

std::vector<Violation> Violations(const fs::path& root) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"kubestat/([a-z_0-9]+)/([^"]+)")re");
  std::set<std::string> folders;  // the top-level folders the rules name
  for (const auto& [room, allowed] : Allowed()) folders.insert(room.substr(0, room.find('/')));
  std::vector<Violation> found;
  for (const std::string& folder : folders) {
    const fs::path dir = root / folder;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".proto")) continue;
      const std::string relative = fs::relative(entry.path(), root).string();
      const std::string room = RoomOfFile(relative);
      const std::set<std::string>& allowed = Allowed().at(room);
      std::ifstream in(entry.path());
      std::string text;
      int number = 0;
      while (std::getline(in, text)) {
        ++number;
        std::smatch m;
        if (!std::regex_search(text, m, kInclude)) continue;
        const std::string target = RoomOfInclude(m[1], m[2]);
        bool ok = allowed.contains(target);
        // A folder's internal/ headers are its own (and its tests').
        if (ok && std::string(m[2]).rfind("internal/", 0) == 0) {
          ok = room.substr(0, room.find('/')) == std::string(m[1]);
        }
        // The simulator may use the HTTP server, not the client.
        if (ok && room == "sim" && target == "http") {
          ok = std::string(m[2]).rfind("server", 0) == 0 || std::string(m[2]).rfind("tls", 0) == 0;
        }
        if (!ok) {
          found.push_back(
              {relative, number, "kubestat/" + std::string(m[1]) + "/" + std::string(m[2])});
        }
      }
    }
  }
  // In path order, whatever order the directories are read in.
  std::sort(found.begin(), found.end(), [](const Violation& a, const Violation& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  return found;
}

TEST(IncludeDirectionTest, EveryIncludePointsDownTheDependencyOrder) {
  const fs::path root = KUBESTAT_SOURCE_DIR;
  ASSERT_TRUE(fs::exists(root / "core")) << root;
  for (const Violation& v : Violations(root)) {
    ADD_FAILURE() << v.file << ":" << v.line << " includes " << v.include
                  << ", which its folder may not depend on";
  }
}

// Every folder of the tree that the build adds as code (its own CMakeLists.txt), other than
// the tests, their support, benchmarks and fuzz targets that may use anything (and that no
// rule lets a library include), has a rule above, and so has
// every room inside one (<folder>/<room>/ with its headers in include/kubestat/<folder>/<room>/);
// every rule names a folder or room that is there: a new room cannot go unchecked.
TEST(IncludeDirectionTest, EveryLibraryFolderAndRoomHasARule) {
  const fs::path root = KUBESTAT_SOURCE_DIR;
  const std::set<std::string> users_of_everything = {"tests", "testing", "bench", "fuzz"};
  std::set<std::string> rooms;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !fs::exists(entry.path() / "CMakeLists.txt") ||
        users_of_everything.contains(name)) {
      continue;
    }
    rooms.insert(name);
    for (const auto& sub : fs::directory_iterator(entry.path())) {
      const std::string room = sub.path().filename().string();
      if (sub.is_directory() && fs::exists(sub.path() / "CMakeLists.txt") &&
          fs::exists(sub.path() / "include" / "kubestat" / name / room)) {
        rooms.insert(name + "/" + room);
      }
    }
  }
  for (const std::string& room : rooms) {
    EXPECT_TRUE(Allowed().contains(room)) << room << "/ holds a library but has no rule";
  }
  for (const auto& [room, allowed] : Allowed()) {
    EXPECT_TRUE(rooms.contains(room)) << "a rule names " << room << "/, which is not there";
  }
}

// The check itself finds a wrong-way include (a copy of the tree with some planted), between
// folders and between the rooms of one folder.
TEST(IncludeDirectionTest, AWrongWayIncludeIsFound) {
  const fs::path root = fs::temp_directory_path() / ("kubestat-layout-" + std::to_string(getpid()));
  fs::create_directories(root / "core" / "src");
  fs::create_directories(root / "sim" / "src");
  fs::create_directories(root / "aggregator" / "ingest" / "src");
  fs::create_directories(root / "aggregator" / "src");
  std::ofstream(root / "core" / "src" / "a.cc") << "#include \"kubestat/aggregator/x.h\"\n";
  std::ofstream(root / "sim" / "src" / "b.cc") << "#include \"kubestat/http/client.h\"\n"
                                                  "#include \"kubestat/http/server.h\"\n";
  std::ofstream(root / "aggregator" / "ingest" / "src" / "c.cc")
      << "#include \"kubestat/aggregator/ingest/y.h\"\n"
         "#include \"kubestat/aggregator/query/z.h\"\n";
  std::ofstream(root / "aggregator" / "src" / "d.cc")
      << "#include \"kubestat/aggregator/query/z.h\"\n"
         "#include \"kubestat/storage/internal/keys.h\"\n";
  fs::create_directories(root / "storage" / "src");
  std::ofstream(root / "storage" / "src" / "e.cc")
      << "#include \"kubestat/storage/internal/keys.h\"\n";
  const std::vector<Violation> found = Violations(root);
  fs::remove_all(root);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].file, "aggregator/ingest/src/c.cc");
  EXPECT_EQ(found[0].include, "kubestat/aggregator/query/z.h");
  EXPECT_EQ(found[1].file, "aggregator/src/d.cc");
  EXPECT_EQ(found[1].include, "kubestat/storage/internal/keys.h");
  EXPECT_EQ(found[2].file, "core/src/a.cc");
  EXPECT_EQ(found[2].include, "kubestat/aggregator/x.h");
  EXPECT_EQ(found[3].file, "sim/src/b.cc");
  EXPECT_EQ(found[3].include, "kubestat/http/client.h");
}

}  // namespace
}  // namespace kubestat
