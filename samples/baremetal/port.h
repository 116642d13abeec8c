/* The board's output channel: a UART on a microcontroller. */
#ifndef KILN_SAMPLES_BAREMETAL_PORT_H
#define KILN_SAMPLES_BAREMETAL_PORT_H

#include <stddef.h>

void port_write(const char *bytes, size_t n);

#endif
