/* port_write for running the sample under Linux or qemu-user: one raw write
 * system call, no stdio buffering. A board provides its own port_write. */
#define _POSIX_C_SOURCE 200809L
#include "port.h"

#include <unistd.h>

void port_write(const char *bytes, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, bytes, n);
    if (w <= 0)
      return;
    bytes += w;
    n -= (size_t)w;
  }
}
