#include "kiln/kiln.h"

const char *kiln_status_message(kiln_status s) {
  /* No default: -Wswitch then flags a status added without a message. */
  switch (s) {
  case KILN_OK:
    return "ok";
  case KILN_ERR_ARGUMENT:
    return "invalid argument (NULL pointer, token or index outside its table, or bad count)";
  case KILN_ERR_IO:
    return "pack file could not be opened, sized or mapped";
  case KILN_ERR_TRUNCATED:
    return "pack is truncated: fewer bytes than the header or the generated code expects";
  case KILN_ERR_MAGIC:
    return "not a Kiln pack (bad magic or table identifier)";
  case KILN_ERR_VERSION:
    return "unsupported pack format version";
  case KILN_ERR_MODEL_HASH:
    return "pack was written for another model or compile (model hash mismatch)";
  case KILN_ERR_BOUNDS:
    return "pack header ranges are inconsistent or disagree with the generated code";
  case KILN_ERR_ALIGNMENT:
    return "pack data is not 64-byte aligned in memory, or data_offset is not page aligned";
  case KILN_ERR_ARENA:
    return "arena is smaller than the model needs";
  case KILN_ERR_CONTEXT_FULL:
    return "context is full: the position would pass the KV cache capacity";
  case KILN_ERR_CPU:
    return "this CPU lacks instructions the model was generated for (see its --target)";
  case KILN_ERR_CORRUPT:
    return "a layer of the pack fails its checksum: the weights are corrupt";
  case KILN_ERR_SESSION:
    return "no such open session, or no session free";
  case KILN_ERR_POOL_FULL:
    return "the KV page pool has no free page";
  }
  return "unknown status";
}
