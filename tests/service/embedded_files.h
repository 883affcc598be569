// Test helper: checks that FindDashboardFile (the one this test binary links)
// holds every file of a folder byte for byte, with its content type.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "common/fs.h"
#include "service/dashboard.h"

namespace saturn {

namespace fs = std::filesystem;

inline const std::set<std::string> kEmbeddedExtensions = {".html", ".js",  ".css",
                                                          ".svg",  ".png", ".ico"};

// The names of DIR's files that the build embeds.
inline std::set<std::string> FilesToEmbed(const std::string& dir) {
  std::set<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && kEmbeddedExtensions.count(entry.path().extension().string())) {
      names.insert(entry.path().filename().string());
    }
  }
  return names;
}

inline std::string ExpectedContentType(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  return "image/x-icon";
}

inline void ExpectAllEmbedded(const std::string& dir) {
  std::set<std::string> names = FilesToEmbed(dir);
  ASSERT_TRUE(names.count("index.html")) << dir;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const DashboardFile* file = FindDashboardFile(name);
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->name, name);
    EXPECT_EQ(file->content_type, ExpectedContentType(name));
    std::string on_disk = ReadFile(dir + "/" + name);
    EXPECT_EQ(file->body.size(), on_disk.size());
    EXPECT_TRUE(file->body == on_disk) << "embedded bytes differ from " << dir << "/" << name;
  }
}

}  // namespace saturn
