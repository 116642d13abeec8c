// Pass/fail counting shared by the quantizer test programs.
#ifndef KILN_TEST_COMPILER_QUANT_CHECK_H
#define KILN_TEST_COMPILER_QUANT_CHECK_H

#include <cstdio>
#include <string>

namespace kiln::test {

inline int passed = 0, failed = 0;

inline void check(bool ok, const std::string &what) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  std::printf("FAIL: %s\n", what.c_str());
}

/// Prints the tally; the exit status of the program.
inline int finish() {
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

} // namespace kiln::test

#endif // KILN_TEST_COMPILER_QUANT_CHECK_H
