#include "service/client.h"

#include <httplib.h>

#include <cctype>
#include <stdexcept>

#include "common/error.h"

namespace saturn {
namespace {

using nlohmann::json;

httplib::Client Connect(const std::string& server) {
  httplib::Client c(server);
  c.set_connection_timeout(5);
  c.set_read_timeout(180);
  return c;
}

// What went wrong, in a user's words (httplib says "Connection").
std::string WhyUnreachable(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "could not connect: no service listens there, or the host or port is wrong";
    case httplib::Error::ConnectionTimeout:
      return "no connection within 5 s";
    case httplib::Error::Read:
      return "no answer within 180 s, or the connection broke";
    case httplib::Error::Write:
      return "the connection broke while the request was sent";
    default:
      return httplib::to_string(error);
  }
}

ServiceClient::Reply ToReply(const httplib::Result& r, const std::string& server) {
  if (!r) {
    throw SystemError("cannot reach the service at " + server + " (" + WhyUnreachable(r.error()) +
                      "); is `saturn serve` running there? (--server URL)");
  }
  ServiceClient::Reply reply;
  reply.status = r->status;
  reply.body = json::parse(r->body, nullptr, false);
  if (reply.body.is_discarded()) reply.body = json{{"error", r->body}};
  return reply;
}

}  // namespace

ServiceClient::ServiceClient(const std::string& server, std::string token)
    : server_(server), token_(std::move(token)) {
  if (server_.rfind("http://", 0) != 0 || server_.size() <= 7) {
    throw InputError("", 0, "--server", "expected http://HOST:PORT, got " + Quote(server_));
  }
  while (!server_.empty() && server_.back() == '/')
    server_.pop_back();
}

ServiceClient::Reply ServiceClient::Get(const std::string& path) const {
  httplib::Headers h;
  if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
  return ToReply(Connect(server_).Get(path, h), server_);
}

ServiceClient::Reply ServiceClient::Post(const std::string& path, const json& body) const {
  httplib::Headers h;
  if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
  return ToReply(Connect(server_).Post(path, h, body.dump(), "application/json"), server_);
}

ServiceClient::Reply ServiceClient::Delete(const std::string& path) const {
  httplib::Headers h;
  if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
  return ToReply(Connect(server_).Delete(path, h), server_);
}

std::string UrlPathEscape(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace saturn
