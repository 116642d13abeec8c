#include "passes/MemoryPlanner.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>
#include <numeric>

using namespace kiln;

static bool liveTogether(const BufferRequest &a, const BufferRequest &b) {
  return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep;
}

MemoryPlan kiln::planMemory(llvm::ArrayRef<BufferRequest> requests, int64_t alignment) {
  MemoryPlan plan;
  size_t n = requests.size();
  plan.offsets.assign(n, 0);
  std::vector<int64_t> sizes(n);
  for (size_t i = 0; i < n; ++i)
    sizes[i] = llvm::alignTo(requests[i].bytes, alignment);

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b])
      return sizes[a] > sizes[b];
    return requests[a].firstStep < requests[b].firstStep;
  });

  std::vector<size_t> placed;
  for (size_t i : order) {
    // Ranges taken by placed buffers live at the same time as this one.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (liveTogether(requests[i], requests[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + sizes[j]});
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (begin - offset >= sizes[i])
        break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.peakBytes = std::max(plan.peakBytes, offset + sizes[i]);
    placed.push_back(i);
  }

  // Bytes live at each step change only where a buffer starts or ends.
  std::map<int64_t, int64_t> delta;
  for (size_t i = 0; i < n; ++i) {
    delta[requests[i].firstStep] += sizes[i];
    delta[requests[i].lastStep + 1] -= sizes[i];
  }
  int64_t live = 0;
  for (auto [step, change] : delta) {
    live += change;
    plan.lowerBound = std::max(plan.lowerBound, live);
  }
  return plan;
}
