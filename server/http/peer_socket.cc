#include "server/http/peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <string>

namespace embedding::server {
namespace {

// "address:port" of a socket address, as httplib spells the request's addresses.
bool Matches(const sockaddr_storage& addr, const std::string& want_addr, int want_port) {
  char text[INET6_ADDRSTRLEN] = {};
  int port = -1;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  return port == want_port && want_addr == text;
}

}  // namespace

int ConnectionSocket(const httplib::Request& req) {
  if (req.ssl != nullptr) return SSL_get_fd(req.ssl);
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return -1;
  int found = -1;
  while (dirent* entry = readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
      continue;
    }
    if (Matches(local, req.local_addr, req.local_port) &&
        Matches(peer, req.remote_addr, req.remote_port)) {
      found = fd;
      break;
    }
  }
  closedir(fds);
  return found;
}

bool PeerClosed(int fd) {
  pollfd watch{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&watch, 1, 0) <= 0) return false;
  if (watch.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char byte;
  return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // 0: end of stream
}

}  // namespace embedding::server
