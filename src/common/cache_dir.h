// Where Saturn keeps what it caches for a user across runs (the profile
// cache, the token cache): $XDG_CACHE_HOME/saturn, else ~/.cache/saturn,
// else .cache/saturn in the working folder.
//
//   std::string tokens = (fs::path(SaturnCacheDir()) / "tokens").string();
#pragma once

#include <string>

namespace saturn {

std::string SaturnCacheDir();

}  // namespace saturn
