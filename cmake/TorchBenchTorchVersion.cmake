# The LibTorch releases this project builds with: the one place a version is
# decided. The releases tested (tools/tb abtest builds and runs each; README
# "Two LibTorch releases"): 2.11.0 (the GPU machine's), 2.13.0, 2.14.1 (the
# pin), 2.15.0. Their APIs as used here are the same, so there is no version
# switch in the code; one that a release needs belongs in lib/src/, once.
# (torchvision's operator library changed its name: lib/CMakeLists.txt.)
#
# torchbench_check_torch_version(<version>): FATAL_ERROR below 2.11, a
# WARNING from 2.16, else a STATUS line. As a script,
#   cmake -DTORCH_VERSION_TO_CHECK=2.10.0 -P cmake/TorchBenchTorchVersion.cmake
# checks one version (tests/cmake/torch_version_gate.sh).
set(TORCHBENCH_TORCH_OLDEST 2.11)
set(TORCHBENCH_TORCH_NEWEST_TESTED 2.15)

function(torchbench_check_torch_version version)
  if(version VERSION_LESS TORCHBENCH_TORCH_OLDEST)
    message(FATAL_ERROR "TorchBench builds with LibTorch ${TORCHBENCH_TORCH_OLDEST} to "
                        "${TORCHBENCH_TORCH_NEWEST_TESTED}, found ${version}: pip install "
                        "torch==2.14.1 (tools/tb setup), or point Torch_DIR at a newer one")
  elseif(version VERSION_GREATER_EQUAL 2.16)
    message(WARNING "TorchBench is tested with LibTorch ${TORCHBENCH_TORCH_OLDEST} to "
                    "${TORCHBENCH_TORCH_NEWEST_TESTED}, found ${version}: untested "
                    "(tools/tb abtest --torch 2.14.1 --torch ${version} --build-only tries it)")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED TORCH_VERSION_TO_CHECK)
  torchbench_check_torch_version("${TORCH_VERSION_TO_CHECK}")
  message(STATUS "LibTorch ${TORCH_VERSION_TO_CHECK}: accepted")
endif()
