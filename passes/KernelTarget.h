#ifndef KILN_PASSES_KERNELTARGET_H
#define KILN_PASSES_KERNELTARGET_H

#include <cstdint>

namespace kiln {

/// What the kernel-level passes need to know of the target.
struct KernelTarget {
  int64_t panelRows = 0;    // rows per weight panel; 0 keeps the row layout
  // GGUF block formats (comma-separated) that the panel kernels also read.
  const char *blockPanels = "";
  int64_t l2Bytes = 262144; // cache model for tile-for-cache
  int64_t vectorBytes = 16;
  int64_t registers = 16;
  // Least work (multiply-adds, or weighted elements of row-wise ops) that the
  // workers finish sooner than one core, hand-off included: about a million int8
  // multiply-adds, several microseconds of one core, so that a tiny model's
  // decode stays on the caller.
  int64_t minSplitWork = 1 << 20;
};

} // namespace kiln

#endif // KILN_PASSES_KERNELTARGET_H
