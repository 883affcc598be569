// The dashboard's files, built into the binary (no CDN, no build step): the
// page `saturn serve` answers `GET /` with, and any file it loads from
// `/dashboard/<name>`. The page reads the API (docs/contracts.md, Contract
// 6) and follows `/v1/events` to update live.
//
//   const DashboardFile* f = FindDashboardFile("index.html");
//   if (f) reply(f->content_type, f->body);
#pragma once

#include <string_view>

namespace saturn {

struct DashboardFile {
  std::string_view name;
  std::string_view content_type;
  std::string_view body;
};

// nullptr for a name the dashboard does not have.
const DashboardFile* FindDashboardFile(std::string_view name);

}  // namespace saturn
