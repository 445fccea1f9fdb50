#include "podresources_server.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubestat/sim/podresources_wire.h"
#include "kubestat/sim/topology.h"

namespace kubestat::sim {
namespace {

constexpr char kService[] = "v1.PodResourcesLister";
constexpr char kList[] = "/v1.PodResourcesLister/List";
constexpr char kAllocatable[] = "/v1.PodResourcesLister/GetAllocatableResources";
constexpr char kGet[] = "/v1.PodResourcesLister/Get";

// What a call is answered: a status and, when OK, the message's bytes.
struct Answer {
  grpc::Status status;
  std::string bytes;
};

// A grpc-go server's answer to a method it does not have.
grpc::Status Unimplemented(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string method = slash == std::string::npos ? path : path.substr(slash + 1);
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      absl::StrCat("unknown method ", method, " for service ", kService));
}

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string FromByteBuffer(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

class Reactor;

}  // namespace

struct PodResourcesSockets::State {
  State(std::string d, Duration delay, const ClusterModel& m, const Clock& c,
        const PodResourcesFaultTable& f)
      : dir(std::move(d)), slow_delay(delay), model(m), clock(c), faults(f) {}

  // One node's gRPC server and the service it runs.
  struct Node;

  // An answer held back by the "slow" fault until `due` (monotonic).
  struct Held {
    Timestamp due;
    int node = 0;
    Reactor* reactor = nullptr;
    Answer answer;
  };

  Answer Compute(int node, const std::string& method, const std::string& request) const;
  void Hold(int node, Reactor* reactor, Answer answer);
  // Finishes the held answers of `node` (all nodes when -1) with UNAVAILABLE at once.
  void ReleaseHeld(int node);
  void TimerLoop();
  absl::Status StartNode(int node);  // mu held
  void StopNode(int node);           // mu held

  const std::string dir;
  const Duration slow_delay;
  const ClusterModel& model;
  const Clock& clock;
  const PodResourcesFaultTable& faults;
  std::vector<NodeTopology> topologies;
  std::vector<NodeAssignments> assignments;

  std::mutex mu;  // guards nodes and started; held while a node's server starts or stops
  std::vector<std::unique_ptr<Node>> nodes;
  bool started = false;

  std::mutex held_mu;         // guards held, stopping and closing
  std::vector<bool> closing;  // per node: its server is being shut down
  std::condition_variable held_cv;
  std::multimap<Timestamp, Held> held;
  bool stopping = false;
  std::thread timer;
};

namespace {

// One call, answered once its request arrived (at once, or later for the "slow" fault).
class Reactor final : public grpc::ServerGenericBidiReactor {
 public:
  Reactor(PodResourcesSockets::State* state, int node, std::string method)
      : state_(state), node_(node), method_(std::move(method)) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Send({grpc::Status(grpc::StatusCode::INTERNAL, "no request message"), ""});
      return;
    }
    Answer answer = state_->Compute(node_, method_, FromByteBuffer(request_));
    if (state_->faults.Get(state_->model.node(node_).name) == PodResourcesFault::kSlow) {
      state_->Hold(node_, this, std::move(answer));
      return;
    }
    Send(answer);
  }

  // Sends the answer and ends the call; called once.
  void Send(const Answer& answer) {
    if (!answer.status.ok()) {
      Finish(answer.status);
      return;
    }
    response_ = ToByteBuffer(answer.bytes);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 private:
  PodResourcesSockets::State* state_;
  const int node_;
  const std::string method_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

}  // namespace

namespace {

// The service of one node's server (gRPC binds a generic service to one server for good, so
// a restarted socket gets a new one).
class NodeService final : public grpc::CallbackGenericService {
 public:
  NodeService(PodResourcesSockets::State* state, int node) : state_(state), node_(node) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Reactor(state_, node_, ctx->method());
  }

 private:
  PodResourcesSockets::State* state_;
  int node_;
};

}  // namespace

struct PodResourcesSockets::State::Node {
  std::unique_ptr<NodeService> service;  // outlives `server`
  std::unique_ptr<grpc::Server> server;
};

Answer PodResourcesSockets::State::Compute(int node, const std::string& method,
                                           const std::string& request) const {
  const PodResourcesFault fault = faults.Get(model.node(node).name);
  const bool has_allocatable = fault != PodResourcesFault::kNoAllocatable;
  const bool has_get = has_allocatable && fault != PodResourcesFault::kNoGet;
  if (method == kAllocatable && has_allocatable) {
    return {grpc::Status::OK, EncodeAllocatableResponse(topologies[node])};
  }
  if (method != kList && !(method == kGet && has_get)) return {Unimplemented(method), ""};

  // The pods the kubelet runs now, with what their slots were given.
  const Timestamp now = clock.Now();
  std::vector<PodResourcesEntry> pods;
  pods.reserve(static_cast<size_t>(model.pods_per_node()));
  for (int slot = 0; slot < model.pods_per_node(); ++slot) {
    PodInfo pod = model.Pod(node, slot, now);
    PodResourcesEntry entry{std::move(pod.name), std::move(pod.namespace_name), {}};
    const std::vector<ContainerAssignment>& given = assignments[node][static_cast<size_t>(slot)];
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      entry.containers.emplace_back(pod.containers[c].name,
                                    c < given.size() ? given[c] : ContainerAssignment{});
    }
    pods.push_back(std::move(entry));
  }
  if (method == kList) return {grpc::Status::OK, EncodeListResponse(pods)};

  absl::StatusOr<GetPodRequest> get = DecodeGetRequest(request);
  if (!get.ok()) {
    return {grpc::Status(grpc::StatusCode::INTERNAL, std::string(get.status().message())), ""};
  }
  for (const PodResourcesEntry& pod : pods) {
    if (pod.name == get->pod_name && pod.namespace_name == get->pod_namespace) {
      return {grpc::Status::OK, EncodeGetResponse(pod)};
    }
  }
  // The kubelet returns a plain Go error, which gRPC sends as UNKNOWN.
  return {
      grpc::Status(grpc::StatusCode::UNKNOWN, absl::StrCat("pod ", get->pod_name, " in namespace ",
                                                           get->pod_namespace, " not found")),
      ""};
}

void PodResourcesSockets::State::Hold(int node, Reactor* reactor, Answer answer) {
  {
    std::lock_guard<std::mutex> lock(held_mu);
    if (!stopping && !closing[static_cast<size_t>(node)]) {
      const Timestamp due = clock.MonotonicNow() + slow_delay;
      held.emplace(due, Held{due, node, reactor, std::move(answer)});
      held_cv.notify_all();
      return;
    }
  }
  reactor->Send({grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubelet shutting down"), ""});
}

void PodResourcesSockets::State::ReleaseHeld(int node) {
  std::vector<Held> released;
  {
    std::lock_guard<std::mutex> lock(held_mu);
    for (auto it = held.begin(); it != held.end();) {
      if (node < 0 || it->second.node == node) {
        released.push_back(std::move(it->second));
        it = held.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Held& h : released) {
    h.reactor->Send({grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubelet shutting down"), ""});
  }
}

void PodResourcesSockets::State::TimerLoop() {
  std::unique_lock<std::mutex> lock(held_mu);
  while (!stopping) {
    const Timestamp now = clock.MonotonicNow();
    std::vector<Held> due;
    while (!held.empty() && held.begin()->first <= now) {
      due.push_back(std::move(held.begin()->second));
      held.erase(held.begin());
    }
    if (!due.empty()) {
      lock.unlock();
      for (Held& h : due) h.reactor->Send(h.answer);
      lock.lock();
      continue;
    }
    // Re-reads the clock at least every 50 ms (a FakeClock notifies nobody).
    held_cv.wait_for(lock, std::chrono::milliseconds(50));
  }
}

absl::Status PodResourcesSockets::State::StartNode(int node) {
  Node& n = *nodes[node];
  if (n.server) return absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(held_mu);
    closing[static_cast<size_t>(node)] = false;
  }
  const std::filesystem::path socket =
      std::filesystem::path(dir) / model.node(node).name / "kubelet.sock";
  std::error_code ec;
  std::filesystem::create_directories(socket.parent_path(), ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("podresources: cannot create ",
                                               socket.parent_path().string(), ": ", ec.message()));
  }
  std::filesystem::remove(socket, ec);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket.string(), grpc::InsecureServerCredentials());
  n.service = std::make_unique<NodeService>(this, node);
  builder.RegisterCallbackGenericService(n.service.get());
  // As the kubelet: large answers on nodes with many pods.
  builder.SetMaxSendMessageSize(64 << 20);
  n.server = builder.BuildAndStart();
  if (!n.server) {
    return absl::UnavailableError(
        absl::StrCat("podresources: cannot serve on unix socket ", socket.string()));
  }
  return absl::OkStatus();
}

void PodResourcesSockets::State::StopNode(int node) {
  Node& n = *nodes[node];
  if (!n.server) return;
  {
    // Calls arriving from now on are not held, so the shutdown waits for none.
    std::lock_guard<std::mutex> lock(held_mu);
    closing[static_cast<size_t>(node)] = true;
  }
  ReleaseHeld(node);
  n.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  n.server->Wait();
  n.server.reset();
  n.service.reset();
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(dir) / model.node(node).name / "kubelet.sock", ec);
}

PodResourcesSockets::PodResourcesSockets(std::string dir, Duration slow_delay,
                                         const ClusterModel& model, const Clock& clock,
                                         const PodResourcesFaultTable& faults)
    : state_(std::make_unique<State>(std::move(dir), slow_delay, model, clock, faults)) {}

PodResourcesSockets::~PodResourcesSockets() { Stop(); }

absl::Status PodResourcesSockets::Start() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.started) return absl::FailedPreconditionError("podresources sockets already started");
  s.started = true;
  const int count = s.model.node_count();
  s.topologies.reserve(count);
  s.assignments.reserve(count);
  for (int i = 0; i < count; ++i) {
    s.topologies.push_back(TopologyOf(s.model, i));
    s.assignments.push_back(AssignmentsOf(s.model, i));
    s.nodes.push_back(std::make_unique<State::Node>());
  }
  s.closing.assign(static_cast<size_t>(count), false);
  s.timer = std::thread([&s] { s.TimerLoop(); });
  for (int i = 0; i < count; ++i) {
    if (s.faults.Get(s.model.node(i).name) == PodResourcesFault::kAbsent) continue;
    if (absl::Status st = s.StartNode(i); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status PodResourcesSockets::Apply(int node) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started || node < 0 || node >= static_cast<int>(s.nodes.size())) {
    return absl::FailedPreconditionError("podresources sockets are not served");
  }
  if (s.faults.Get(s.model.node(node).name) == PodResourcesFault::kAbsent) {
    s.StopNode(node);
    return absl::OkStatus();
  }
  return s.StartNode(node);
}

absl::Status PodResourcesSockets::Restart(int node) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started || node < 0 || node >= static_cast<int>(s.nodes.size())) {
    return absl::FailedPreconditionError("podresources sockets are not served");
  }
  s.StopNode(node);
  if (s.faults.Get(s.model.node(node).name) == PodResourcesFault::kAbsent) {
    return absl::OkStatus();
  }
  return s.StartNode(node);
}

void PodResourcesSockets::Stop() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started) return;
  {
    std::lock_guard<std::mutex> held_lock(s.held_mu);
    if (s.stopping) return;
    s.stopping = true;
  }
  s.held_cv.notify_all();
  if (s.timer.joinable()) s.timer.join();
  s.ReleaseHeld(-1);
  for (size_t i = 0; i < s.nodes.size(); ++i) s.StopNode(static_cast<int>(i));
}

std::string PodResourcesSockets::SocketPath(int node) const {
  return (std::filesystem::path(state_->dir) / state_->model.node(node).name / "kubelet.sock")
      .string();
}

}  // namespace kubestat::sim
