// A client of `saturn serve`'s API (Contract 6), for `saturn submit`,
// `status`, `cancel` and `wait`. The token comes from the caller (the CLI
// reads SATURN_TOKEN or --token-file).
//
//   ServiceClient c("http://127.0.0.1:8470", token);
//   ServiceClient::Reply r = c.Get("/v1/tasks");   // r.status, r.body (JSON)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace saturn {

class ServiceClient {
 public:
  // InputError naming --server for a URL that is not http://HOST:PORT.
  ServiceClient(const std::string& server, std::string token);

  struct Reply {
    int status = 0;
    nlohmann::json body;
  };
  // std::runtime_error naming the server when it cannot be reached.
  Reply Get(const std::string& path) const;
  Reply Post(const std::string& path, const nlohmann::json& body) const;
  Reply Delete(const std::string& path) const;

  const std::string& server() const { return server_; }

 private:
  std::string server_;
  std::string token_;
};

// Percent-encodes a task id for a URL path.
std::string UrlPathEscape(const std::string& text);

}  // namespace saturn
