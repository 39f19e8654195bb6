// A tiny test framework: TEST(name) { CHECK(...); } and one main per test executable.
#ifndef EDL_TESTS_TEST_UTIL_H_
#define EDL_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "status.h"

namespace edl::recordio {
inline std::ostream& operator<<(std::ostream& os, ErrorCode c) { return os << ErrorCodeName(c); }
}  // namespace edl::recordio

namespace edl::test {

using edl::recordio::operator<<;

struct TestCase {
  const char* name;
  std::function<void()> fn;
};

std::vector<TestCase>& Registry();
/// Failures of the test that is running.
int& Failures();

struct Registrar {
  Registrar(const char* name, std::function<void()> fn) { Registry().push_back({name, fn}); }
};

template <typename A, typename B>
bool CheckEq(const A& a, const B& b, const char* ea, const char* eb, const char* file, int line) {
  if (a == b) return true;
  std::ostringstream os;
  os << file << ":" << line << ": CHECK_EQ(" << ea << ", " << eb << ") failed: " << a
     << " != " << b;
  std::fprintf(stderr, "%s\n", os.str().c_str());
  ++Failures();
  return false;
}

/// A file of the golden test vectors (EDL_GOLDEN_DIR in the environment, else the build default).
std::string GoldenPath(const std::string& name);

/// A new directory `<TMPDIR>/<prefix>-XXXXXX` (mkdtemp; on Windows, where mingw-w64 has no mkdtemp,
/// `<TEMP>/<prefix>-<pid>`); the temporary directory itself if it cannot be made.
std::string MakeTempDir(const std::string& prefix);

/// Deterministic pseudo-random bytes.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(Next() % n); }
  std::string Bytes(size_t n, bool compressible) {
    static const char* const kWords[] = {"record ", "tensor ", "shard ", "worker ", "a ", "the "};
    std::string s;
    s.reserve(n + 8);
    if (compressible) {
      while (s.size() < n) s += kWords[Below(6)];
      s.resize(n);
    } else {
      for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(Next() & 0xff));
    }
    return s;
  }

 private:
  uint64_t s_;
};

}  // namespace edl::test

#define EDL_CAT2(a, b) a##b
#define EDL_CAT(a, b) EDL_CAT2(a, b)
#define TEST(name)                                                                   \
  static void name();                                                                \
  static ::edl::test::Registrar EDL_CAT(registrar_, name)(#name, name); /* NOLINT */ \
  static void name()

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++::edl::test::Failures();                                                    \
    }                                                                               \
  } while (0)

#define CHECK_EQ(a, b) ::edl::test::CheckEq((a), (b), #a, #b, __FILE__, __LINE__)

/// Checks a Status is OK, printing it otherwise.
#define CHECK_OK(expr)                                                                          \
  do {                                                                                          \
    const auto& edl_s_ = (expr);                                                                \
    if (!edl_s_.ok()) {                                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s %s\n", __FILE__, __LINE__, #expr, edl_s_.code_name(), \
                   edl_s_.message().c_str());                                                   \
      ++::edl::test::Failures();                                                                \
    }                                                                                           \
  } while (0)

#endif  // EDL_TESTS_TEST_UTIL_H_
