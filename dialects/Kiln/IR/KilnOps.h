#ifndef KILN_DIALECTS_KILN_IR_KILNOPS_H
#define KILN_DIALECTS_KILN_IR_KILNOPS_H

#include "dialects/Kiln/IR/KilnDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

#endif // KILN_DIALECTS_KILN_IR_KILNOPS_H
