# Installs the contract (TorchBench::harness and its headers, the only ones
# installed), the models (as object files, so their registrars reach every
# downstream executable), the program's machinery as a library without
# headers (TorchBench::program, for RunBenchmarks), the torchbench program,
# and a TorchBench CMake package exporting the three.
include(CMakePackageConfigHelpers)

# The installed program finds the libraries it was built against that lie
# outside the install prefix and the system's directories: LibTorch's lib/
# (a wheel or a distribution) and the CUDA runtime's.
# LibTorch's libraries are linked by full path, which
# INSTALL_RPATH_USE_LINK_PATH does not count, so its lib/ is named.
set_target_properties(torchbench PROPERTIES
  INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib"
  INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS torchbench_harness torchbench_models torchbench_program torchbench
  EXPORT TorchBenchTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  OBJECTS DESTINATION ${CMAKE_INSTALL_LIBDIR}/torchbench/objects)
# vision_ops.cpp loads it by its install path (not part of the export).
install(TARGETS torchbench_torch_python_stub LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY lib/include/torchbench DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT TorchBenchTargets
  NAMESPACE TorchBench::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchBench)

# The package remembers which LibTorch it was built against.
set(TORCHBENCH_TORCH_DIR "${Torch_DIR}")
configure_package_config_file(cmake/TorchBenchConfig.cmake.in
  "${PROJECT_BINARY_DIR}/TorchBenchConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchBench)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/TorchBenchConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/TorchBenchConfig.cmake"
              "${PROJECT_BINARY_DIR}/TorchBenchConfigVersion.cmake"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchBench)
