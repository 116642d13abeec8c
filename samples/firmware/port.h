/* What the firmware needs from its board (boot/startup.c on the MPS2/MPS3
 * boards): output, a cycle count, the stack's use, and the end of the run. */
#ifndef KILN_SAMPLES_FIRMWARE_PORT_H
#define KILN_SAMPLES_FIRMWARE_PORT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes to the board's UART. */
void port_write(const char *bytes, size_t n);
/* Core clock cycles since boot. */
uint64_t port_cycles(void);
/* The stack's high-water mark and size, in bytes. */
size_t port_stack_used(void);
size_t port_stack_bytes(void);
/* Ends the run with `status` (under an emulator: its exit status). */
void port_exit(int status);

#endif
