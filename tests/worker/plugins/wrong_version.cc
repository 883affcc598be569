// A plug-in built against a future technique API: must be refused before its
// registration function runs (which would abort the test).
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) int saturn_technique_api_version() {
  return 999;
}
extern "C" __attribute__((visibility("default"))) const char* saturn_technique_torch_version() {
  return "1.13.0";
}
extern "C" __attribute__((visibility("default"))) void saturn_register_techniques(void*) {
  std::abort();
}
