/* A generated graph (an encoder compiled from ONNX) seen through one table,
 * so that programs such as kiln-run work with any graph. Each graph defines
 * `<name>_api`; its header also has every shape as a constant. */
#ifndef KILN_KILN_GRAPH_H
#define KILN_KILN_GRAPH_H

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of a graph's inputs and outputs. */
typedef enum kiln_element {
  KILN_ELEMENT_F32 = 0,
  KILN_ELEMENT_I64 = 1,
  KILN_ELEMENT_I32 = 2,
  KILN_ELEMENT_I8 = 3,
  KILN_ELEMENT_U8 = 4,
  KILN_ELEMENT_BOOL = 5, /* one byte, 0 or 1 */
  KILN_ELEMENT_F16 = 6,
  KILN_ELEMENT_F64 = 7
} kiln_element;

/* One input or output: row-major, `bytes` = elements times the element's size. */
typedef struct kiln_tensor_info {
  const char *name; /* as the source graph names it */
  kiln_element element;
  int32_t rank;
  const int64_t *shape;
  int64_t elements;
  size_t bytes;
} kiln_tensor_info;

typedef struct kiln_graph_api {
  const char *name;
  size_t model_bytes; /* sizeof the graph's state struct */
  size_t arena_bytes; /* exact arena size from plan-memory */
  uint64_t pack_bytes;
  int32_t inputs, outputs;
  int32_t threads; /* shares of each split kernel (kiln-compile --threads) */
  const kiln_tensor_info *input_info, *output_info;
  /* Checks the arena (64-byte aligned, at least arena_bytes) and that the
   * pack was written for this code. */
  kiln_status (*open)(void *model, const kiln_pack_source *src, void *arena, size_t arena_bytes);
  /* inputs[i] holds input i (input_info[i].bytes), outputs[i] receives output
   * i; KILN_ERR_ARGUMENT for an index input outside its table. */
  kiln_status (*run)(void *model, const void *const *inputs, void *const *outputs);
  /* The split kernels' shares on `workers`; NULL runs them on the caller. */
  void (*set_workers)(void *model, const kiln_workers *workers);
  void (*close)(void *model);
} kiln_graph_api;

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_GRAPH_H */
