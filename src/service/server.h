// `saturn serve`'s HTTP front (API v1, docs/contracts.md Contract 6) over a
// Service (service.h): JSON in and out, server-sent events for the event
// stream, the dashboard at `/`. cpp-httplib (Debian's libcpp-httplib-dev)
// does the HTTP; this file only routes, checks and limits.
//
// Security: without a token file the server listens on loopback addresses
// only; with one, every request needs `Authorization: Bearer <token>` (GET
// requests may pass `?access_token=`, which EventSource needs), compared in
// constant time; 401 otherwise (the dashboard page itself, which holds no
// data, loads without it). Bodies over the cap get 413.
//
//   ServeOptions o; o.source.cluster_path = "cluster.yaml";
//   return Serve(o);   // until SIGTERM/SIGINT; InputError on bad options
#pragma once

#include <string>
#include <string_view>

#include "service/service.h"

namespace saturn {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "HOST:PORT" or ":PORT" (loopback); InputError naming --listen.
ListenAddress ParseListen(const std::string& text);
bool IsLoopback(const std::string& host);
// Equal, in time that depends only on the lengths.
bool SameToken(std::string_view a, std::string_view b);
// The token in a token file (surrounding whitespace dropped); InputError
// for a missing or empty file.
std::string ReadToken(const std::string& path, std::string_view field);

int Serve(const ServeOptions& options);

}  // namespace saturn
