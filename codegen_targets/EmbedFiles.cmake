# Writes OUTPUT: a C++ table of the files in FILES (paths relative to BASE) as raw
# string literals, so kiln-compile can copy the runtime into every output folder.
set(content "// Generated from the runtime and sample sources; do not edit.\n")
string(APPEND content "static const EmbeddedFile kEmbeddedFiles[] = {\n")
foreach(file ${FILES})
  file(READ ${BASE}/${file} text)
  string(APPEND content "  {\"${file}\", R\"kiln_embedded(${text})kiln_embedded\"},\n")
endforeach()
string(APPEND content "};\n")
file(WRITE ${OUTPUT}.tmp "${content}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
