# Reads the ISA table, codegen_targets/isa_variants.json, into variables of the
# including scope, for the code that CMake generates from it and the tests it
# defines per variant:
#   KILN_ISA_VARIANTS               the variant names, in the table's order
#   KILN_ISA_<name>_<FIELD>         ARCH, ENTRY, FLAGS, CPU (a list), PANEL_ROWS,
#                                   BLOCK_PANELS (a list), L2, VECTOR_BYTES, REGISTERS
#   KILN_ARCHES                     the architectures of `arches`
#   KILN_ARCH_<arch>_<FIELD>        CC, CC_FLAGS, CMAKE (a list), RUN
# Editing the table re-runs CMake.
set(KILN_ISA_TABLE ${PROJECT_SOURCE_DIR}/codegen_targets/isa_variants.json)

macro(kiln_json_list out)
  set(${out})
  string(JSON _n LENGTH "${_table}" ${ARGN})
  if(_n GREATER 0)
    math(EXPR _last "${_n} - 1")
    foreach(_j RANGE ${_last})
      string(JSON _item GET "${_table}" ${ARGN} ${_j})
      list(APPEND ${out} "${_item}")
    endforeach()
  endif()
endmacro()

function(kiln_read_isa_table)
  file(READ ${KILN_ISA_TABLE} _table)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KILN_ISA_TABLE})
  set(names)
  string(JSON count LENGTH "${_table}" variants)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${_table}" variants ${i} name)
    list(APPEND names ${name})
    foreach(field arch entry flags panel_rows l2 vector_bytes registers)
      string(TOUPPER ${field} upper)
      string(JSON value GET "${_table}" variants ${i} ${field})
      set(KILN_ISA_${name}_${upper} "${value}" PARENT_SCOPE)
    endforeach()
    kiln_json_list(cpu variants ${i} cpu)
    kiln_json_list(block_panels variants ${i} block_panels)
    set(KILN_ISA_${name}_CPU "${cpu}" PARENT_SCOPE)
    set(KILN_ISA_${name}_BLOCK_PANELS "${block_panels}" PARENT_SCOPE)
  endforeach()
  set(KILN_ISA_VARIANTS ${names} PARENT_SCOPE)

  set(arches)
  string(JSON count LENGTH "${_table}" arches)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON arch MEMBER "${_table}" arches ${i})
    list(APPEND arches ${arch})
    foreach(field cc cc_flags run)
      string(TOUPPER ${field} upper)
      string(JSON value GET "${_table}" arches ${arch} ${field})
      set(KILN_ARCH_${arch}_${upper} "${value}" PARENT_SCOPE)
    endforeach()
    kiln_json_list(cmake_args arches ${arch} cmake)
    set(KILN_ARCH_${arch}_CMAKE "${cmake_args}" PARENT_SCOPE)
  endforeach()
  set(KILN_ARCHES ${arches} PARENT_SCOPE)
endfunction()

kiln_read_isa_table()

# The C expression that is true when the running CPU has every feature of
# variant `name` (GCC and Clang on x86), or 1.
function(kiln_isa_cpu_check name out)
  set(check)
  foreach(f ${KILN_ISA_${name}_CPU})
    list(APPEND check "__builtin_cpu_supports(\"${f}\")")
  endforeach()
  if(NOT check OR NOT KILN_ISA_${name}_ARCH STREQUAL "x86_64")
    set(check 1)
  endif()
  string(REPLACE ";" "&&" check "${check}")
  set(${out} "${check}" PARENT_SCOPE)
endfunction()
