/* Boot code for the Kiln firmware on an Arm Cortex-M board: the vector table,
 * the reset handler (copy .data, clear .bss, enable the FPU and Helium, paint
 * the stack, run main), a cycle counter on SysTick, the CMSDK UART of the
 * MPS2/MPS3 boards, and the exit, which under an emulator with semihosting
 * ends the run with main's status. */
#include <stdint.h>
#include <string.h>

#include "port.h"

extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end;
extern uint32_t __stack_limit, __stack_top;
int main(void);
void kiln_reset(void);

#define REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#define CPACR REG(0xE000ED88u)
#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
#define STACK_PAINT 0xA5A5A5A5u

static volatile uint32_t systick_wraps;

static void systick_handler(void) { ++systick_wraps; }

static void fault_handler(void) {
  static const char m[] = "\nfault: the firmware stopped\n";
  port_write(m, sizeof m - 1);
  port_exit(3);
}

static void default_handler(void) { fault_handler(); }

/* The initial stack pointer, then the handlers of the 15 system exceptions;
 * the boards' peripheral interrupts stay disabled. */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top,
    kiln_reset,
    default_handler, /* NMI */
    fault_handler,   /* HardFault */
    fault_handler,   /* MemManage */
    fault_handler,   /* BusFault */
    fault_handler,   /* UsageFault */
    fault_handler,   /* SecureFault */
    0, 0, 0,
    default_handler, /* SVCall */
    default_handler, /* DebugMonitor */
    0,
    default_handler, /* PendSV */
    systick_handler,
};

uint64_t port_cycles(void) {
  uint32_t wraps, value;
  do {
    wraps = systick_wraps;
    value = SYST_CVR;
  } while (wraps != systick_wraps);
  return ((uint64_t)wraps << 24) + (0xFFFFFFu - value);
}

size_t port_stack_used(void) {
  const uint32_t *p = &__stack_limit;
  while (p < &__stack_top && *p == STACK_PAINT)
    ++p;
  return (size_t)((const uint8_t *)&__stack_top - (const uint8_t *)p);
}

size_t port_stack_bytes(void) {
  return (size_t)((const uint8_t *)&__stack_top - (const uint8_t *)&__stack_limit);
}

/* CMSDK APB UART: data, state (bit 0: transmit buffer full), control (bit 0:
 * transmit enable), baud divider. */
void port_write(const char *bytes, size_t n) {
  static int ready;
  size_t i;
  if (!ready) {
    REG(KILN_UART_BASE + 0x10u) = 16u;
    REG(KILN_UART_BASE + 0x08u) = 1u;
    ready = 1;
  }
  for (i = 0; i < n; ++i) {
    while (REG(KILN_UART_BASE + 0x04u) & 1u)
      ;
    REG(KILN_UART_BASE) = (uint8_t)bytes[i];
  }
}

/* Semihosting SYS_EXIT_EXTENDED (0x20): ADP_Stopped_ApplicationExit with the
 * status, which qemu -semihosting returns as its own exit status. */
void port_exit(int status) {
  uint32_t block[2] = {0x20026u, (uint32_t)status};
  register uint32_t r0 __asm__("r0") = 0x20u;
  register uint32_t *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  for (;;)
    ;
}

#ifdef KILN_SEMIHOSTING_STDIO
/* Test images: newlib's stdio over semihosting (librdimon). */
void initialise_monitor_handles(void);
#endif

void kiln_reset(void) {
  uint32_t *p;
  memcpy(&__data_start, &__data_load,
         (size_t)((uint8_t *)&__data_end - (uint8_t *)&__data_start));
  memset(&__bss_start, 0, (size_t)((uint8_t *)&__bss_end - (uint8_t *)&__bss_start));
  /* CP10 and CP11 (the FPU, and Helium on Armv8.1-M): full access. */
  CPACR |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
  /* Paint the stack below this frame, to measure its high-water mark. */
  for (p = &__stack_limit; p < &__stack_top - 64; ++p)
    *p = STACK_PAINT;
  SYST_RVR = 0xFFFFFFu;
  SYST_CVR = 0;
  SYST_CSR = 7u; /* the core clock, the wrap interrupt, enabled */
  while (SYST_CVR == 0) /* the first tick loads the reload value, uncounted */
    ;
#ifdef KILN_SEMIHOSTING_STDIO
  initialise_monitor_handles();
#endif
  port_exit(main());
}
