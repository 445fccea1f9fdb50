// Dependencies point one way: core ← apimachinery ← http, kube, metrics_api, windows, limits
// ← discovery ← scrapers, storage ← aggregator; the bridge, the apiserver and the node agent use
// core, apimachinery, http, kube, metrics_api and proto only; the simulator uses core, apimachinery
// and the HTTP server only (it must not share the client, decoders or renderers with what it
// tests). This test reads every source file's `#include "kubestat/<folder>/..."` lines and
// fails on one that points the wrong way, and on a folder of the tree it has no rule for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
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
      {"aggregator",
       {"core", "apimachinery", "http", "kube", "metrics_api", "windows", "limits", "storage",
        "discovery", "scrapers", "proto", "aggregator"}},
      {"bridge", {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "bridge"}},
      {"apiserver", {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "apiserver"}},
      {"agent", {"core", "apimachinery", "http", "kube", "metrics_api", "proto", "agent"}},
      {"sim", {"core", "apimachinery", "http", "sim"}},
  };
  return *allowed;
}

// The folder an included "kubestat/<x>/..." header lives in.
std::string FolderOf(const std::string& include_dir) {
  if (include_dir == "v1" || include_dir == "podresources") return "proto";
  return include_dir;
}

struct Violation {
  std::string file;
  int line;
  std::string include;
};

std::vector<Violation> Violations(const fs::path& root) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"kubestat/([a-z_0-9]+)/([^"]+)")re");
  std::vector<Violation> found;
  for (const auto& [folder, allowed] : Allowed()) {
    const fs::path dir = root / folder;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".proto")) continue;
      std::ifstream in(entry.path());
      std::string text;
      int number = 0;
      while (std::getline(in, text)) {
        ++number;
        std::smatch m;
        if (!std::regex_search(text, m, kInclude)) continue;
        const std::string target = FolderOf(m[1]);
        bool ok = allowed.contains(target);
        // The simulator may use the HTTP server, not the client.
        if (ok && folder == "sim" && target == "http") {
          ok = std::string(m[2]).rfind("server", 0) == 0 || std::string(m[2]).rfind("tls", 0) == 0;
        }
        if (!ok) {
          found.push_back({fs::relative(entry.path(), root).string(), number,
                           "kubestat/" + std::string(m[1]) + "/" + std::string(m[2])});
        }
      }
    }
  }
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
// the tests, benchmarks and fuzz targets that may use anything, has a rule above, and every
// rule names a folder that is there: a new room cannot go unchecked.
TEST(IncludeDirectionTest, EveryLibraryFolderHasARule) {
  const fs::path root = KUBESTAT_SOURCE_DIR;
  const std::set<std::string> users_of_everything = {"tests", "bench", "fuzz"};
  std::set<std::string> libraries;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && fs::exists(entry.path() / "CMakeLists.txt") &&
        !users_of_everything.contains(name)) {
      libraries.insert(name);
    }
  }
  for (const std::string& folder : libraries) {
    EXPECT_TRUE(Allowed().contains(folder)) << folder << "/ holds a library but has no rule";
  }
  for (const auto& [folder, allowed] : Allowed()) {
    EXPECT_TRUE(libraries.contains(folder)) << "a rule names " << folder << "/, which is not there";
  }
}

// The check itself finds a wrong-way include (a copy of the tree with one planted).
TEST(IncludeDirectionTest, AWrongWayIncludeIsFound) {
  const fs::path root = fs::temp_directory_path() / ("kubestat-layout-" + std::to_string(getpid()));
  fs::create_directories(root / "core" / "src");
  fs::create_directories(root / "sim" / "src");
  std::ofstream(root / "core" / "src" / "a.cc") << "#include \"kubestat/aggregator/x.h\"\n";
  std::ofstream(root / "sim" / "src" / "b.cc") << "#include \"kubestat/http/client.h\"\n"
                                                  "#include \"kubestat/http/server.h\"\n";
  const std::vector<Violation> found = Violations(root);
  fs::remove_all(root);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].file, "core/src/a.cc");
  EXPECT_EQ(found[0].include, "kubestat/aggregator/x.h");
  EXPECT_EQ(found[1].file, "sim/src/b.cc");
  EXPECT_EQ(found[1].include, "kubestat/http/client.h");
}

}  // namespace
}  // namespace kubestat
