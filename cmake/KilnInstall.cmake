# `cmake --install`: the compiler's tools under bin/, the runtime's and the
# kernel library's sources and the ISA and board table under share/kiln/, and
# the CMake package (KilnConfig.cmake, with kiln_add_model) under lib/cmake/Kiln.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(KILN_INSTALL_BIN ${CMAKE_INSTALL_BINDIR})
set(KILN_INSTALL_SHARE ${CMAKE_INSTALL_DATADIR}/kiln)
set(KILN_INSTALL_CMAKE ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
file(RELATIVE_PATH KILN_CONFIG_TO_PREFIX /prefix/${KILN_INSTALL_CMAKE} /prefix)

# The installed tools find MLIR's and LLVM's shared libraries where they linked them.
set_target_properties(kiln-compile kiln-opt kiln-translate PROPERTIES
  INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS kiln-compile kiln-opt kiln-translate RUNTIME DESTINATION ${KILN_INSTALL_BIN})
install(DIRECTORY runtime/include runtime/src DESTINATION ${KILN_INSTALL_SHARE}/runtime)
install(DIRECTORY kernels DESTINATION ${KILN_INSTALL_SHARE} FILES_MATCHING PATTERN "*.h")
install(FILES codegen_targets/isa_variants.json DESTINATION ${KILN_INSTALL_SHARE})

configure_file(cmake/KilnConfig.cmake.in ${PROJECT_BINARY_DIR}/KilnConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  cmake/KilnIsaVariants.cmake cmake/arm-none-eabi.cmake
  DESTINATION ${KILN_INSTALL_CMAKE})
