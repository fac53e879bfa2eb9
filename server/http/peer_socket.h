// Whether the client of an HTTP request is still connected. cpp-httplib gives a handler no
// socket and no disconnect callback, so the socket is found by the connection's addresses
// (or taken from its TLS session) and watched for the peer's end of stream.
#pragma once

#include <httplib.h>

namespace embedding::server {

// The accepted socket carrying `req`; -1 when it cannot be found.
int ConnectionSocket(const httplib::Request& req);

// True once the peer has closed its side or the connection failed. Data the peer sent after
// the request (a pipelined next request) is not a close.
bool PeerClosed(int fd);

}  // namespace embedding::server
