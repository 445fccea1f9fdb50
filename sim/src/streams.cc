#include "streams.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "kubestat/apimachinery/api_error.h"
#include "sim_http.h"

namespace kubestat::sim {

using http::Response;
using http::StreamWriter;

namespace {

constexpr size_t kOversizedQueued = size_t{4} << 20;
constexpr size_t kWatchBacklogLimit = size_t{16} << 20;

}  // namespace

void Send(Stream& s, std::string_view data) {
  if (!data.empty()) s.writer->Write(std::string(data));
}

StreamSet::StreamSet(const Clock& clock) : clock_(clock) {}

StreamSet::~StreamSet() { Stop(); }

std::shared_ptr<Stream> StreamSet::Open(Stream::Kind kind, Duration lifetime) const {
  auto s = std::make_shared<Stream>();
  s->kind = kind;
  s->deadline = clock_.MonotonicNow() + lifetime;
  return s;
}

Response StreamSet::Respond(const std::shared_ptr<Stream>& s, const char* content_type,
                            std::string initial) {
  Response response = Reply(200, "", content_type);
  response.stream = [this, s,
                     initial = std::move(initial)](std::shared_ptr<StreamWriter> writer) mutable {
    s->writer = std::move(writer);
    Send(*s, initial);
    s->writer->Flush();
    Add(s);
  };
  return response;
}

void StreamSet::Add(std::shared_ptr<Stream> s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    s->writer->Finish();
    return;
  }
  streams_.push_back(std::move(s));
}

void StreamSet::SendTo(absl::FunctionRef<bool(const Stream&)> matches, std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : streams_) {
    if (matches(*s)) Send(*s, data);
  }
}

Response StreamSet::Hold() {
  Response response = ReplyError(ApiError::ServiceUnavailable("shutting down"));
  std::string answer = std::move(response.body);
  response.body.clear();
  response.stream = [this, answer = std::move(answer)](std::shared_ptr<StreamWriter> writer) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      writer->Write(answer);
      writer->Finish();
      return;
    }
    held_.push_back(Held{std::move(writer), answer});
  };
  return response;
}

bool StreamSet::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void StreamSet::Service() {
  static const std::string kFiller(1 << 20, 'x');
  std::vector<std::shared_ptr<Stream>> closing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Timestamp mono = clock_.MonotonicNow();
    for (auto it = streams_.begin(); it != streams_.end();) {
      Stream& s = **it;
      bool done = mono >= s.deadline || s.writer->closed();
      if (!done && s.kind == Stream::Kind::kOversized) {
        while (s.remaining > 0 && s.writer->queued_bytes() < kOversizedQueued) {
          const size_t n = std::min(s.remaining, kFiller.size());
          Send(s, std::string_view(kFiller).substr(0, n));
          s.remaining -= n;
        }
        done = s.remaining == 0;
      } else if (!done && s.kind == Stream::Kind::kSlowdrip) {
        if (RealClock::Get().MonotonicNow() >= s.next_drip) {
          const size_t n = std::min<size_t>(4, s.payload.size() - s.sent);
          Send(s, std::string_view(s.payload).substr(s.sent, n));
          s.sent += n;
          s.next_drip = RealClock::Get().MonotonicNow() + std::chrono::seconds(1);
        }
        done = s.sent >= s.payload.size();
      } else if (!done) {
        done = s.writer->queued_bytes() > kWatchBacklogLimit;  // nobody is reading
      }
      if (done) {
        closing.push_back(*it);
        it = streams_.erase(it);
      } else {
        ++it;
      }
    }
    std::erase_if(held_, [](const Held& h) { return h.writer->closed(); });
  }
  for (auto& s : closing) s->writer->Finish();
}

void StreamSet::Stop() {
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<Held> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    streams.swap(streams_);
    held.swap(held_);
  }
  for (auto& stream : streams) stream->writer->Finish();
  for (auto& h : held) {
    h.writer->Write(std::move(h.answer));
    h.writer->Finish();
  }
}

}  // namespace kubestat::sim
