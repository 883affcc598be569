#include "common/cache_dir.h"

#include <cstdlib>
#include <filesystem>

namespace saturn {

std::string SaturnCacheDir() {
  namespace fs = std::filesystem;
  fs::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = fs::path(home) / ".cache";
  } else {
    base = ".cache";
  }
  return (base / "saturn").string();
}

}  // namespace saturn
