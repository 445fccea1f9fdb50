#define _TURN_OFF_PLATFORM_STRING
#include "harness.h"

#include <cpprest/http_client.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

// This library's target has only its own folder on the include path.
#include "kubestat/core/time.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::testing {

namespace fs = std::filesystem;

std::optional<std::string> FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

bool KubectlTopAsksProtobuf(const std::string& kubectl, const fs::path& dir) {
  const RunResult version = Run(kubectl, {"version", "--client", "-o", "json"},
                                dir / "kubectl-version.log", std::chrono::seconds(30));
  // "minor": "20" (or "32+" on some builds).
  const size_t at = version.output.find("\"minor\"");
  if (version.exit_code != 0 || at == std::string::npos) return true;
  const size_t digits = version.output.find_first_of("0123456789", at);
  return digits == std::string::npos || std::atoi(version.output.c_str() + digits) >= 22;
}

double MetricValue(const std::string& exposition, const std::string& series) {
  size_t at = exposition.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(exposition.substr(at + series.size() + 2));
}

Process::Process(const std::string& binary, const std::vector<std::string>& args,
                 const fs::path& log, const std::string& input) {
  pid_ = ::fork();
  if (pid_ == 0) {
    int in = ::open(input.c_str(), O_RDONLY);
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) ::_exit(126);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
}

Process::~Process() { Stop(); }

bool Process::Running() {
  if (pid_ <= 0 || exit_code_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

int Process::Wait(std::chrono::seconds deadline) {
  PollUntil([this] { return !Running(); }, deadline);
  return exit_code_ ? *exit_code_ : -1;
}

void Process::Stop() {
  if (!Running()) return;
  ::kill(pid_, SIGTERM);
  if (PollUntil([this] { return !Running(); }, std::chrono::seconds(5))) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_code_ = 137;
}

int Process::Signal(int signal, std::chrono::seconds deadline) {
  if (!Running()) return exit_code_ ? *exit_code_ : -1;
  ::kill(pid_, signal);
  return Wait(deadline);
}

RunResult Run(const std::string& binary, const std::vector<std::string>& args, const fs::path& log,
              std::chrono::seconds deadline) {
  RunResult result;
  {
    Process process(binary, args, log);
    result.exit_code = process.Wait(deadline);
  }
  result.output = ReadAll(log);
  return result;
}

std::optional<HttpReply> HttpGetReply(int port, const std::string& path_and_query) {
  try {
    web::http::client::http_client_config config;
    config.set_timeout(std::chrono::seconds(5));
    web::http::client::http_client client("http://127.0.0.1:" + std::to_string(port), config);
    web::http::http_response response =
        client.request(web::http::methods::GET, path_and_query).get();
    return HttpReply{response.status_code(), response.extract_string(true).get()};
  } catch (const std::exception&) {
    return std::nullopt;  // not listening yet, or reset
  }
}

std::optional<HttpReply> HttpsGetReply(
    int port, const std::string& path_and_query, const std::string& bearer_token,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& host) {
  // curl in a process of its own: an in-process HTTPS client would leave OpenSSL state that
  // LeakSanitizer cannot attribute (libcrypto has no frame pointers) in the sanitizer runs.
  static const std::optional<std::string> curl = FindOnPath("curl");
  if (!curl) return std::nullopt;
  const TempDir scratch("kubestat-https");
  const fs::path& dir = scratch.path();
  std::vector<std::string> args = {"--silent",    "--insecure",  "--max-time",
                                   "5",           "--output",    (dir / "body").string(),
                                   "--write-out", "%{http_code}"};
  // The token goes in a header file, not on the command line other processes can read.
  {
    std::ofstream header_file(dir / "headers");
    if (!bearer_token.empty()) header_file << "Authorization: Bearer " << bearer_token << "\n";
    for (const auto& [name, value] : headers) header_file << name << ": " << value << "\n";
  }
  args.push_back("--header");
  args.push_back("@" + (dir / "headers").string());
  args.push_back("https://" + host + ":" + std::to_string(port) + path_and_query);
  const RunResult run = Run(*curl, args, dir / "curl.log", std::chrono::seconds(10));
  std::optional<HttpReply> reply;
  const int code = std::atoi(run.output.c_str());
  if (run.exit_code == 0 && code > 0) reply = HttpReply{code, ReadAll(dir / "body")};
  return reply;
}

namespace {

// kubectl with dir/kubeconfig and `args`, its log at dir/`log`; nullopt without kubectl.
std::optional<RunResult> KubectlWithKubeconfig(const fs::path& dir, std::vector<std::string> args,
                                               const std::string& log) {
  static const std::optional<std::string> kubectl = FindOnPath("kubectl");
  if (!kubectl) return std::nullopt;
  args.insert(args.begin(), "--kubeconfig=" + (dir / "kubeconfig").string());
  return Run(*kubectl, args, dir / log, std::chrono::seconds(30));
}

}  // namespace

std::string NodeTimestampThroughKubectl(const fs::path& dir) {
  const std::optional<RunResult> got = KubectlWithKubeconfig(
      dir, {"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/node-0000"}, "kubectl.log");
  if (!got) return "";
  const RunResult& run = *got;
  const size_t at = run.output.find("\"timestamp\":\"");
  if (run.exit_code != 0 || at == std::string::npos) return "";
  return run.output.substr(at + 13, 20);
}

bool ServesFreshThroughKubectl(const fs::path& dir, std::chrono::seconds deadline) {
  const std::string now =
      FormatRfc3339(std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
  if (!PollUntil([&] { return NodeTimestampThroughKubectl(dir) > now; }, deadline)) return false;
  // kubectl top reads the same object (in protobuf, as it asks) and prints no time.
  const std::optional<RunResult> top =
      KubectlWithKubeconfig(dir, {"top", "node", "node-0000", "--no-headers"}, "kubectl-top.log");
  return top && top->exit_code == 0 && top->output.starts_with("node-0000 ");
}

std::optional<std::string> HttpGet(int port, const std::string& path_and_query) {
  std::optional<HttpReply> reply = HttpGetReply(port, path_and_query);
  if (!reply || reply->code != web::http::status_codes::OK) return std::nullopt;
  return std::move(reply->body);
}

bool WaitForLog(const fs::path& log, std::string_view text, std::chrono::seconds deadline) {
  return PollUntil([&] { return ReadAll(log).find(text) != std::string::npos; }, deadline);
}

std::vector<std::string> OpenPlainAccessFlags(int port, const std::filesystem::path& dir) {
  const std::filesystem::path rules = dir / "allow-everyone.yaml";
  std::ofstream(rules) << "rules:\n"
                          "- users: ['*']\n  verbs: ['*']\n  apiGroups: ['*']\n  resources: ['*']\n"
                          "- users: ['*']\n  verbs: ['*']\n  nonResourceURLs: ['*']\n";
  return {"--port=" + std::to_string(port), "--secure-port=0",
          "--cert-dir=" + (dir / "certs").string(), "--anonymous-auth",
          "--authorization-rules-file=" + rules.string()};
}

std::vector<std::string> SimFlags(const std::filesystem::path& dir, int nodes, int seed,
                                  int apiserver_port) {
  return {"--nodes=" + std::to_string(nodes),
          "--pods-per-node=2",
          "--seed=" + std::to_string(seed),
          "--kubelet-address-mode=ports",
          "--kubelet-port=0",
          "--apiserver-port=" + std::to_string(apiserver_port),
          "--kubeconfig-out=" + (dir / "kubeconfig").string()};
}

std::vector<std::string> SimAggregatorFlags(const std::filesystem::path& dir, int port,
                                            const std::filesystem::path& storage_dir,
                                            const std::string& resolution,
                                            const std::string& kubelet_timeout,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> flags = {"--kubeconfig=" + (dir / "kubeconfig").string(),
                                    "--kubelet-scheme=http",
                                    "--kubelet-preferred-address-types=InternalIP",
                                    "--kubelet-use-node-status-port",
                                    "--listen-address=127.0.0.1",
                                    "--grpc-port=0",
                                    "--storage-dir=" + storage_dir.string(),
                                    "--metric-resolution=" + resolution,
                                    "--kubelet-timeout=" + kubelet_timeout};
  for (std::string& flag : OpenPlainAccessFlags(port, dir)) flags.push_back(std::move(flag));
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

}  // namespace kubestat::testing
