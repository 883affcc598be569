// A shared library that is not a Saturn plug-in: no entry points.
extern "C" int not_a_saturn_plugin() {
  return 42;
}
