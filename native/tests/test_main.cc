#include <cstdlib>

#include "test_util.h"

#ifdef _WIN32
#include <direct.h>
#include <process.h>
#else
#include <unistd.h>
#endif

namespace edl::test {

std::vector<TestCase>& Registry() {
  static std::vector<TestCase> r;
  return r;
}

int& Failures() {
  static int n = 0;
  return n;
}

std::string GoldenPath(const std::string& name) {
  const char* env = std::getenv("EDL_GOLDEN_DIR");
  std::string dir = env != nullptr && *env != '\0' ? env : EDL_GOLDEN_DIR_DEFAULT;
  return dir + "/" + name;
}

std::string MakeTempDir(const std::string& prefix) {
#ifdef _WIN32
  const char* base = std::getenv("TEMP");
  const std::string root = base != nullptr ? base : ".";
  std::string dir = root + "/" + prefix + "-" + std::to_string(_getpid());
  return _mkdir(dir.c_str()) == 0 ? dir : root;
#else
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  char* made = mkdtemp(&tmpl[0]);
  return std::string(made != nullptr ? made : "/tmp");
#endif
}

}  // namespace edl::test

int main() {
  int failed = 0;
  for (const auto& t : edl::test::Registry()) {
    edl::test::Failures() = 0;
    t.fn();
    const bool ok = edl::test::Failures() == 0;
    std::printf("[%s] %s\n", ok ? "  OK  " : " FAIL ", t.name);
    if (!ok) ++failed;
  }
  std::printf("%zu tests, %d failed\n", edl::test::Registry().size(), failed);
  return failed == 0 ? 0 : 1;
}
