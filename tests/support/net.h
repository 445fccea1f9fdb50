// Loopback ports for tests that start a server which cannot report the port it bound.
//
// Prefer port 0 and asking the server for its port: a port picked here is only free at
// the moment it is picked, and another process may take it before the caller binds it.
#ifndef KUBESTAT_TESTS_SUPPORT_NET_H_
#define KUBESTAT_TESTS_SUPPORT_NET_H_

namespace kubestat::testing {

// A TCP port on 127.0.0.1 that nothing was bound to a moment ago (port 0 is bound, read
// back and released). Aborts the test binary when no socket can be bound (a broken test
// setup). Thread-safe.
int FreeLoopbackPort();

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTS_SUPPORT_NET_H_
