#ifndef KILN_PASSES_MEMORYPLANNER_H
#define KILN_PASSES_MEMORYPLANNER_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace kiln {

/// One buffer to place: its size and the inclusive range of steps it is live.
struct BufferRequest {
  int64_t bytes = 0;
  int64_t firstStep = 0;
  int64_t lastStep = 0;
};

struct MemoryPlan {
  std::vector<int64_t> offsets; // one per request, multiples of the alignment
  int64_t peakBytes = 0;        // end of the highest buffer
  int64_t lowerBound = 0;       // most bytes live at any one step
};

/// Places buffers in one region so that two buffers live at the same step never
/// overlap: greedy by size (largest first, each at the lowest offset that fits
/// among those it is live with). A pure function, tested on random inputs.
MemoryPlan planMemory(llvm::ArrayRef<BufferRequest> requests, int64_t alignment);

} // namespace kiln

#endif // KILN_PASSES_MEMORYPLANNER_H
