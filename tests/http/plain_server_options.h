// For the HTTP server's socket tests: a plain-HTTP server on a free loopback port whose
// timeouts are long enough never to fire unless a test shortens the one it is about.
#ifndef KUBESTAT_TESTS_HTTP_PLAIN_SERVER_OPTIONS_H_
#define KUBESTAT_TESTS_HTTP_PLAIN_SERVER_OPTIONS_H_

#include <chrono>

#include "kubestat/http/server_options.h"

namespace kubestat::http {

inline ServerOptions PlainOptions() {
  constexpr auto kLong = std::chrono::seconds(60);
  ServerOptions options;
  options.address = "127.0.0.1";
  options.tls.enabled = false;
  options.io_threads = 1;
  options.worker_threads = 2;
  options.limits.header_timeout = kLong;
  options.limits.read_timeout = kLong;
  options.limits.write_timeout = kLong;
  options.limits.idle_timeout = kLong;
  return options;
}

}  // namespace kubestat::http

#endif  // KUBESTAT_TESTS_HTTP_PLAIN_SERVER_OPTIONS_H_
