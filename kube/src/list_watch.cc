// Why it is shaped this way: a watch may end at any time (server timeout, proxy, network);
// resuming from the last resourceVersion seen gives every change exactly once. When that
// version has been compacted away the server says 410 Gone, and only a fresh list can
// bring the consumer back; the consumer diffs that list against what it holds, so it
// still sees deletions that happened while the watch was down.
#include "kubestat/kube/list_watch.h"

#include <cassert>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/http/client.h"
#include "simdjson.h"
#include "watch_event_json.h"

namespace kubestat::kube {
namespace {

namespace dom = simdjson::dom;
namespace ondemand = simdjson::ondemand;

// `text` percent-encoded for a query parameter value (RFC 3986 unreserved bytes kept).
std::string QueryEscape(std::string_view text) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    }
  }
  return out;
}

// A request of the list+watch: GET `path`, JSON wanted, abandoned on `stop`.
http::ClientRequest Get(std::string path, std::stop_token stop) {
  http::ClientRequest request;
  request.path_and_query = std::move(path);
  request.headers.emplace_back("Accept", "application/json");
  request.stop = std::move(stop);
  return request;
}

// The member `key` of `object` when it is a string, else "" (a list's metadata is read
// leniently: a missing continue token simply ends the list).
std::string_view StringMember(dom::object object, std::string_view key) {
  std::string_view value;
  if (object[key].get(value) != simdjson::SUCCESS) return "";
  return value;
}

bool IsSuccess(int code) { return code >= 200 && code <= 299; }

// The failure of a non-2xx answer to GET `path` (see ListWatchError::status).
ListWatchError HttpError(ListWatchError::Stage stage, std::string_view path, int code,
                         std::string_view body) {
  const std::string what = StrCat("GET ", path, ": HTTP ", code);
  absl::StatusOr<ApiError> status = ParseStatusObject(body);
  if (!status.ok()) return {stage, absl::UnavailableError(what), code};
  return {stage, ApiError(code, status->reason(), StrCat(what, ": ", status->message())).ToStatus(),
          code};
}

// One list page: its metadata, and the items handed to `on_item` as they stand in `body`.
struct ListPage {
  std::string resource_version;
  std::string continue_token;
};

// Checks the whole page with the DOM (a malformed page fails the list before any item of
// it reaches the handler), then cuts the items' texts out with the on-demand parser.
// `body` has SIMDJSON_PADDING bytes of spare capacity.
absl::StatusOr<ListPage> ReadListPage(const std::string& body, std::string_view path,
                                      const std::function<void(std::string_view)>& on_item) {
  dom::parser dom_parser;
  dom::element root;
  if (auto error = dom_parser.parse(body).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        StrCat("list ", path, ": invalid JSON: ", simdjson::error_message(error)));
  }
  ListPage page;
  dom::object metadata;
  if (root["metadata"].get(metadata) == simdjson::SUCCESS) {
    page.resource_version = StringMember(metadata, "resourceVersion");
    page.continue_token = StringMember(metadata, "continue");
  }
  dom::array dom_items;
  if (root["items"].get(dom_items) != simdjson::SUCCESS || dom_items.size() == 0) return page;

  ondemand::parser parser;
  ondemand::document doc;
  ondemand::array items;
  if (parser.iterate(body.data(), body.size(), body.capacity()).get(doc) != simdjson::SUCCESS ||
      doc["items"].get_array().get(items) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(StrCat("list ", path, ": items cannot be read"));
  }
  for (auto value : items) {
    ondemand::object item;
    // Anything but an object cannot be a Kubernetes object: skipped.
    if (value.get_object().get(item) != simdjson::SUCCESS) continue;
    std::optional<std::string_view> text = internal::RawObjectText(item);
    if (!text) return absl::InvalidArgumentError(StrCat("list ", path, ": items cannot be read"));
    on_item(*text);
  }
  return page;
}

}  // namespace

absl::Status ListWatchOptions::Validate() const {
  if (path.empty() || path.front() != '/' || path.find('?') != std::string::npos) {
    return absl::InvalidArgumentError(
        StrCat("list+watch path \"", path, "\": must start with '/' and hold no query"));
  }
  if (page_size < 1) return absl::InvalidArgumentError("list+watch page size: must be positive");
  if (watch_timeout < std::chrono::seconds(1)) {
    return absl::InvalidArgumentError("list+watch watch timeout: must be at least 1s");
  }
  if (watch_head_timeout <= Duration::zero()) {
    return absl::InvalidArgumentError("list+watch watch head timeout: must be positive");
  }
  if (retry_backoff < Duration::zero()) {
    return absl::InvalidArgumentError("list+watch retry backoff: must not be negative");
  }
  if (max_event_bytes == 0) {
    return absl::InvalidArgumentError("list+watch event size cap: must be positive");
  }
  return absl::OkStatus();
}

ListWatch::ListWatch(ListWatchOptions options, http::Client& list_client,
                     http::Client& watch_client, ListWatchHandler& handler)
    : options_(std::move(options)),
      list_client_(list_client),
      watch_client_(watch_client),
      handler_(handler) {
  assert(options_.Validate().ok());
}

ListWatch::~ListWatch() { Stop(); }

void ListWatch::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) return;
  started_ = true;
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void ListWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;  // from here on Start() leaves thread_ alone
  }
  // Cancels the request in flight (ClientRequest::stop) and wakes a backoff wait.
  thread_.request_stop();
  std::lock_guard<std::mutex> lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

std::string ListWatch::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resource_version_;
}

void ListWatch::SetResourceVersion(std::string resource_version) {
  std::lock_guard<std::mutex> lock(mu_);
  resource_version_ = std::move(resource_version);
}

bool ListWatch::Backoff(const std::stop_token& stop) {
  std::unique_lock<std::mutex> lock(mu_);
  backoff_cv_.wait_for(lock, stop, options_.retry_backoff, [] { return false; });
  return !stop.stop_requested();
}

void ListWatch::Run(const std::stop_token& stop) {
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      ListWatchError listed = List(stop);
      if (stop.stop_requested()) return;
      if (!listed.status.ok()) {
        handler_.OnError(listed);
        if (!Backoff(stop)) return;
        continue;
      }
      need_list = false;
    }
    bool expired = false;
    ListWatchError watched = Watch(stop, &expired);
    if (stop.stop_requested()) return;
    if (expired) {
      handler_.OnExpired();
      need_list = true;
      continue;
    }
    if (!watched.status.ok()) {
      handler_.OnError(watched);
      if (!Backoff(stop)) return;
    }
    // A watch that ended cleanly is resumed at once from the resume point.
  }
}

std::string ListWatch::FieldSelectorQuery() const {
  if (options_.field_selector.empty()) return "";
  return StrCat("&fieldSelector=", QueryEscape(options_.field_selector));
}

ListWatchError ListWatch::List(const std::stop_token& stop) {
  handler_.OnListStart();
  std::string continue_token;
  std::string resource_version;
  const auto on_item = [this](std::string_view item) { handler_.OnListItem(item); };
  do {
    std::string path = StrCat(options_.path, "?limit=", options_.page_size, FieldSelectorQuery());
    if (!continue_token.empty()) path += StrCat("&continue=", QueryEscape(continue_token));
    http::ClientRequest request = Get(std::move(path), stop);
    request.body_spare_capacity = simdjson::SIMDJSON_PADDING;
    absl::StatusOr<http::ClientResponse> response = list_client_.Do(request);
    if (!response.ok()) return {ListWatchError::Stage::kList, response.status()};
    if (!IsSuccess(response->code)) {
      return HttpError(ListWatchError::Stage::kList, options_.path, response->code, response->body);
    }
    absl::StatusOr<ListPage> page = ReadListPage(response->body, options_.path, on_item);
    if (!page.ok()) return {ListWatchError::Stage::kList, page.status()};
    resource_version = std::move(page->resource_version);
    continue_token = std::move(page->continue_token);
  } while (!continue_token.empty());
  // Stored before the handler hears of it, so a consumer that announces the list (e.g. as
  // synced) already shows the resume point it was listed at.
  SetResourceVersion(resource_version);
  handler_.OnListComplete(resource_version);
  return {};
}

ListWatchError ListWatch::Watch(const std::stop_token& stop, bool* expired) {
  const int64_t timeout_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(options_.watch_timeout).count();
  std::string path = StrCat(options_.path, "?watch=true",
                            options_.allow_watch_bookmarks ? "&allowWatchBookmarks=true" : "",
                            "&resourceVersion=", QueryEscape(resource_version()),
                            "&timeoutSeconds=", timeout_seconds, FieldSelectorQuery());
  handler_.OnWatchStart();
  std::string pending;
  ListWatchError ended{ListWatchError::Stage::kWatch, absl::OkStatus()};
  int status_code = 0;
  std::string error_body;
  http::ClientRequest request = Get(std::move(path), stop);
  request.on_stream_head = [this](int code) {
    if (IsSuccess(code)) handler_.OnWatchOpen();
  };
  absl::Status status = watch_client_.Stream(
      request, options_.watch_head_timeout,
      [&](std::string_view chunk) {
        pending.append(chunk);
        size_t start = 0;
        for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
             start = newline + 1) {
          std::string_view line(pending.data() + start, newline - start);
          if (line.empty() || line == "\r") continue;
          absl::Status handled = HandleLine(line, expired);
          if (*expired) return false;
          if (!handled.ok()) {
            handler_.OnError({ListWatchError::Stage::kEvent, handled});
            ended.status = std::move(handled);
            return false;
          }
        }
        pending.erase(0, start);
        if (pending.size() > options_.max_event_bytes) {
          ended.status = absl::ResourceExhaustedError(StrCat("watch ", options_.path,
                                                             ": an event is larger than ",
                                                             options_.max_event_bytes, " bytes"));
          return false;
        }
        return true;
      },
      &status_code, &error_body);
  if (!status.ok()) return {ListWatchError::Stage::kWatch, status};
  if (status_code == 410) {
    *expired = true;
    return {};
  }
  if (status_code == 504) {
    if (absl::StatusOr<ApiError> error = ParseStatusObject(error_body);
        error.ok() && IsResourceVersionTooLarge(*error)) {
      *expired = true;
      return {};
    }
  }
  if (!IsSuccess(status_code)) {
    return HttpError(ListWatchError::Stage::kWatch, options_.path, status_code, error_body);
  }
  return ended;
}

absl::Status ListWatch::HandleLine(std::string_view line, bool* expired) {
  absl::StatusOr<WatchEvent> event = ParseWatchEvent(line);
  if (!event.ok()) return event.status();
  if (event->type == WatchEventType::kError) {
    absl::StatusOr<ApiError> error = ParseStatusObject(event->object_json);
    if (!error.ok()) return error.status();
    if (IsResourceExpired(*error) || IsResourceVersionTooLarge(*error)) {
      *expired = true;
      return absl::OkStatus();
    }
    return ApiError(error->code(), error->reason(), StrCat("watch error: ", error->message()))
        .ToStatus();
  }
  absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(event->object_json);
  if (!meta.ok()) return meta.status();
  if (event->type != WatchEventType::kBookmark) {
    if (absl::Status applied = handler_.OnEvent(*event); !applied.ok()) return applied;
  }
  if (!meta->resource_version.empty()) SetResourceVersion(std::move(meta->resource_version));
  return absl::OkStatus();
}

}  // namespace kubestat::kube
