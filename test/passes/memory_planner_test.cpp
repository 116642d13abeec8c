// Property test of planMemory on random dataflow graphs: buffers live at the same
// step never overlap, every buffer is aligned and inside the planned region, and
// the region is never smaller than the bytes live at any one step.
#include "passes/MemoryPlanner.h"

#include <cstdio>
#include <random>

using namespace kiln;

/// A random graph of `n` ops, each reading one to three earlier values; a value
/// lives from its op to its last reader (or the end, for about one in ten).
static std::vector<BufferRequest> randomGraph(std::mt19937 &rng, int n) {
  std::vector<BufferRequest> buffers(n);
  std::uniform_int_distribution<int64_t> size(1, 1 << 16);
  for (int i = 0; i < n; ++i) {
    buffers[i] = {size(rng), i, i};
    int reads = 1 + rng() % 3;
    for (int r = 0; i > 0 && r < reads; ++r) {
      int src = rng() % i;
      buffers[src].lastStep = std::max<int64_t>(buffers[src].lastStep, i);
    }
    if (rng() % 10 == 0)
      buffers[i].lastStep = n;
  }
  return buffers;
}

static int check(const std::vector<BufferRequest> &b, const MemoryPlan &plan,
                 int64_t alignment) {
  auto end = [&](size_t i) { return plan.offsets[i] + b[i].bytes; };
  int64_t live = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (plan.offsets[i] < 0 || plan.offsets[i] % alignment != 0 || end(i) > plan.peakBytes)
      return std::printf("buffer %zu at %lld is misaligned or outside the region\n", i,
                         (long long)plan.offsets[i]), 1;
    for (size_t j = 0; j < i; ++j) {
      bool together = b[i].firstStep <= b[j].lastStep && b[j].firstStep <= b[i].lastStep;
      bool overlap = plan.offsets[i] < end(j) && plan.offsets[j] < end(i);
      if (together && overlap)
        return std::printf("buffers %zu and %zu are live together and overlap\n", i, j), 1;
    }
  }
  int64_t steps = 0;
  for (const BufferRequest &r : b)
    steps = std::max(steps, r.lastStep);
  for (int64_t s = 0; s <= steps; ++s) {
    int64_t bytes = 0;
    for (const BufferRequest &r : b)
      if (r.firstStep <= s && s <= r.lastStep)
        bytes += (r.bytes + alignment - 1) / alignment * alignment;
    live = std::max(live, bytes);
  }
  if (live != plan.lowerBound || plan.peakBytes < plan.lowerBound)
    return std::printf("lower bound %lld, expected %lld (peak %lld)\n",
                       (long long)plan.lowerBound, (long long)live,
                       (long long)plan.peakBytes), 1;
  return 0;
}

int main() {
  std::mt19937 rng(1234);
  int passed = 0, failed = 0;
  double worst = 1.0;
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t alignment = int64_t(1) << (rng() % 8);
    std::vector<BufferRequest> buffers = randomGraph(rng, 1 + rng() % 120);
    MemoryPlan plan = planMemory(buffers, alignment);
    if (check(buffers, plan, alignment) == 0)
      ++passed;
    else
      ++failed, std::printf("trial %d failed\n", trial);
    if (plan.lowerBound > 0)
      worst = std::max(worst, double(plan.peakBytes) / plan.lowerBound);
  }
  std::printf("worst peak / lower bound: %.3f\n", worst);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
