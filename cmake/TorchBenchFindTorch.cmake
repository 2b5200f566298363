# Finds LibTorch. A LibTorch the user already has wins (Torch_DIR or
# CMAKE_PREFIX_PATH); otherwise the torch wheel of the project's .venv, then
# of python3 on PATH, is asked for its CMake prefix.
# LibTorch's CUDA config probes the installed GPUs with a try_run that fails
# on CMake < 3.26 under C++20 and on GPU-less machines; we compile no CUDA
# code, so an explicit architecture list is enough.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
endif()
# nvcc may sit in /usr/local/bin as a wrapper; point FindCUDA at the toolkit.
if(NOT CUDA_TOOLKIT_ROOT_DIR AND EXISTS "/usr/local/cuda/include/cuda.h")
  set(CUDA_TOOLKIT_ROOT_DIR "/usr/local/cuda")
endif()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  set(_tb_pythons "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  find_program(_tb_system_python NAMES python3 python)
  if(_tb_system_python)
    list(APPEND _tb_pythons "${_tb_system_python}")
  endif()
  foreach(_tb_python IN LISTS _tb_pythons)
    if(EXISTS "${_tb_python}")
      execute_process(
        COMMAND "${_tb_python}" -c "import torch; print(torch.utils.cmake_prefix_path)"
        OUTPUT_VARIABLE _tb_torch_prefix
        OUTPUT_STRIP_TRAILING_WHITESPACE
        RESULT_VARIABLE _tb_rc ERROR_QUIET)
      if(_tb_rc EQUAL 0 AND _tb_torch_prefix)
        list(APPEND CMAKE_PREFIX_PATH "${_tb_torch_prefix}")
        message(STATUS "TorchBench: LibTorch from ${_tb_python}")
        break()
      endif()
    endif()
  endforeach()
  find_package(Torch REQUIRED)
endif()

# LibTorch's Caffe2/public/mkl.cmake sets caffe2::mkl's link directories to
# ${MKL_ROOT}/lib/{intel64,intel64_win,win-x64} even when it found no MKL
# (pytorch/pytorch#73008); with MKL_ROOT empty they become /lib/intel64 and
# friends and land in every executable's run path. The wheels link MKL
# statically into libtorch_cpu, so without a found MKL those directories
# serve nothing.
if(TARGET caffe2::mkl AND NOT MKL_FOUND)
  set_property(TARGET caffe2::mkl PROPERTY INTERFACE_LINK_DIRECTORIES "")
endif()

include(TorchBenchTorchVersion)
torchbench_check_torch_version("${Torch_VERSION}")
message(STATUS "TorchBench: LibTorch ${Torch_VERSION} (${TORCH_INSTALL_PREFIX})")

# The CUDA-only helpers (device name, CUDA runtime version) compile when the
# LibTorch build has CUDA and the toolkit's runtime headers are here.
set(TORCHBENCH_WITH_CUDA OFF)
if(TARGET torch_cuda AND TARGET CUDA::cudart)
  set(TORCHBENCH_WITH_CUDA ON)
endif()
message(STATUS "TorchBench: CUDA code paths ${TORCHBENCH_WITH_CUDA}")
