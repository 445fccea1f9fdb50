// Loopback ports for tests that start a server which cannot report the port it bound.
//
// Prefer port 0 and asking the server for its port: a port picked here is only known free
// at the moment it is picked (though no other test or ephemeral bind will take it).
#ifndef KUBESTAT_TESTING_NET_H_
#define KUBESTAT_TESTING_NET_H_

namespace kubestat::testing {

// A TCP port on 127.0.0.1 that nothing was bound to a moment ago, outside the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so that no port bound to 0 and
// no outgoing connection takes it before the caller's server binds it, and reserved for
// this process until it exits (ReserveLoopbackPort), so that no other test process picks it
// too. Aborts the test binary when none can be found (a broken test setup). Thread-safe.
int FreeLoopbackPort();

// Reserves `port` for this process until it exits: an exclusive lock on a file named after
// it in /tmp/kubestat-test-ports, which every test process takes before it uses a port.
// False when another process (or an earlier call) holds it.
bool ReserveLoopbackPort(int port);

// A listening TCP socket on 127.0.0.1 at a port the kernel picks, for raw peers written by
// a test: its descriptor, and the port in *port; -1 when it cannot be made.
int ListenOnLoopback(int backlog, int* port);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_NET_H_
