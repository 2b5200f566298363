# cmake -DMODELS_DIR=<models/> -P registration_check.cmake
# models/CMakeLists.txt compiles every .cpp it finds; this checks the other
# half of that rule: each file directly under a domain folder is a model file
# and registers at least one model (a shared block belongs in common/).
file(GLOB _domain_files "${MODELS_DIR}/*/*.cpp")
set(_unregistered "")
foreach(_file IN LISTS _domain_files)
  if(_file MATCHES "/common/")
    continue()
  endif()
  file(READ "${_file}" _text)
  if(NOT _text MATCHES "TORCHBENCH_REGISTER_MODEL\\(")
    list(APPEND _unregistered "${_file}")
  endif()
  get_filename_component(_name "${_file}" NAME)
  if(NOT _name MATCHES "^[a-z0-9_]+\\.cpp$")
    list(APPEND _misnamed "${_file}")
  endif()
endforeach()
if(_unregistered)
  message(FATAL_ERROR "model files that register no model (move shared code "
                      "to models/common/): ${_unregistered}")
endif()
if(_misnamed)
  message(FATAL_ERROR "model file names are lower snake case (the TorchBench "
                      "spelling stays in spec.name): ${_misnamed}")
endif()
list(LENGTH _domain_files _count)
message(STATUS "${_count} model files, each registering")
