// The node agent's pod network emulation, preloaded (LD_PRELOAD) into every process a pod runs.
//
// On a cluster each pod has its own network namespace: a server that binds the wildcard address
// (0.0.0.0 or ::) listens on the pod's own IP only, so every pod can use the same port. The node
// agent's pods all share this machine's network, each with its own loopback pod IP (127.K.x.y). This
// shim gives them the part of a network namespace that matters for that: bind() to the wildcard
// address becomes bind() to the pod IP from TRAINBENCH_POD_IP (for an IPv6 socket that also accepts
// IPv4, the IPv4-mapped form ::ffff:127.K.x.y), and connect() to the unspecified address (which
// Linux takes to mean "this host", as TCPStore's server does to reach itself) goes to the pod IP.
// Everything else is passed through unchanged (127.0.0.1 stays this machine's loopback, where
// the API server and the agent listen); with no TRAINBENCH_POD_IP the shim does nothing. See tests/nodeagent/README.md.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>

namespace {

using sock_fn = int (*)(int, const sockaddr*, socklen_t);

bool pod_ipv4(in_addr* out) {
  const char* ip = std::getenv("TRAINBENCH_POD_IP");
  return ip != nullptr && *ip != '\0' && inet_pton(AF_INET, ip, out) == 1;
}

bool unspecified_v6(const in6_addr& a) {
  if (IN6_IS_ADDR_UNSPECIFIED(&a)) return true;
  // ::ffff:0.0.0.0
  return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 0 && a.s6_addr[13] == 0 && a.s6_addr[14] == 0 &&
         a.s6_addr[15] == 0;
}

/// Calls `real` with the wildcard/unspecified address of `addr` replaced by the pod IP.
/// `v6_needs_dual_stack`: for bind, an IPv6-only socket keeps "::" (it cannot take a v4 address).
int with_pod_ip(sock_fn real, int fd, const sockaddr* addr, socklen_t len, bool v6_needs_dual_stack) {
  in_addr pod{};
  if (real == nullptr) return -1;
  if (addr == nullptr || !pod_ipv4(&pod)) return real(fd, addr, len);
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in4{};
    std::memcpy(&in4, addr, sizeof in4);
    if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in4.sin_addr = pod;
      return real(fd, reinterpret_cast<const sockaddr*>(&in4), sizeof in4);
    }
  } else if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof in6);
    int v6only = 0;
    socklen_t optlen = sizeof v6only;
    if (unspecified_v6(in6.sin6_addr) &&
        (!v6_needs_dual_stack ||
         (getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &optlen) == 0 && v6only == 0))) {
      // ::ffff:a.b.c.d
      std::memset(&in6.sin6_addr, 0, sizeof in6.sin6_addr);
      in6.sin6_addr.s6_addr[10] = 0xff;
      in6.sin6_addr.s6_addr[11] = 0xff;
      std::memcpy(&in6.sin6_addr.s6_addr[12], &pod, 4);
      return real(fd, reinterpret_cast<const sockaddr*>(&in6), sizeof in6);
    }
  }
  return real(fd, addr, len);
}

}  // namespace

extern "C" int bind(int fd, const sockaddr* addr, socklen_t len) noexcept {
  static const auto real_bind = reinterpret_cast<sock_fn>(dlsym(RTLD_NEXT, "bind"));
  return with_pod_ip(real_bind, fd, addr, len, true);
}

extern "C" int connect(int fd, const sockaddr* addr, socklen_t len) {
  static const auto real_connect = reinterpret_cast<sock_fn>(dlsym(RTLD_NEXT, "connect"));
  return with_pod_ip(real_connect, fd, addr, len, false);
}
