# The libtorch the worker builds against: the pinned torch wheel from PyPI that scripts/torch.sh
# unpacks (scripts/torch/cpu-requirements.txt). Imported targets over its files rather than
# find_package(Torch): the default PyPI wheel is the CUDA build, and its TorchConfig.cmake looks
# for a CUDA toolkit at configure time, which a CPU machine does not have.
#   trainbench::torch  headers, libtorch_cpu (linked whole: its operators register when it loads)
#                      and libc10; C++20 (recent ATen headers need it); Gloo through c10d (the
#                      wheel ships ProcessGroupGloo.hpp but not gloo's own headers: Debian's
#                      libgloo-dev provides those, declarations only, the code is libtorch_cpu's).
# TRAINBENCH_TORCH_DIR overrides the directory (one with torch/ and nvidia/ as the script lays out).
set(TRAINBENCH_TORCH_DIR "" CACHE PATH "Unpacked torch wheel (scripts/torch.sh); empty: ask scripts/torch.sh --path")
if(NOT TRAINBENCH_TORCH_DIR)
  execute_process(COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/torch.sh" --path
                  OUTPUT_VARIABLE _torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR "the worker needs the pinned libtorch: run scripts/torch.sh first (${_torch_err})")
  endif()
  set(TRAINBENCH_TORCH_DIR "${_torch_dir}")
endif()
set(_torch "${TRAINBENCH_TORCH_DIR}/torch")
foreach(_f include/torch/csrc/api/include/torch/torch.h lib/libtorch_cpu.so lib/libc10.so)
  if(NOT EXISTS "${_torch}/${_f}")
    message(FATAL_ERROR "${_torch}/${_f} missing: TRAINBENCH_TORCH_DIR=${TRAINBENCH_TORCH_DIR} is not an unpacked torch wheel")
  endif()
endforeach()
file(STRINGS "${_torch}/version.py" _torch_version REGEX "^__version__")
string(REGEX REPLACE ".*'([^']+)'.*" "\\1" TRAINBENCH_TORCH_VERSION "${_torch_version}")
message(STATUS "libtorch ${TRAINBENCH_TORCH_VERSION} from ${TRAINBENCH_TORCH_DIR}")

# libtorch_cpu links libcudart and libcupti (the kineto profiler) even on a CPU: the runtime
# finds them through the worker's RUNPATH, in the nvidia/*/lib directories beside torch/.
file(GLOB _nvidia_lib_dirs LIST_DIRECTORIES true "${TRAINBENCH_TORCH_DIR}/nvidia/*/lib")
set(TRAINBENCH_TORCH_LIBRARY_DIRS "${_torch}/lib" ${_nvidia_lib_dirs})

add_library(trainbench_torch_c10 SHARED IMPORTED GLOBAL)
set_target_properties(trainbench_torch_c10 PROPERTIES IMPORTED_LOCATION "${_torch}/lib/libc10.so")
add_library(trainbench_torch_cpu SHARED IMPORTED GLOBAL)
set_target_properties(trainbench_torch_cpu PROPERTIES IMPORTED_LOCATION "${_torch}/lib/libtorch_cpu.so")

add_library(trainbench_torch INTERFACE)
add_library(trainbench::torch ALIAS trainbench_torch)
target_include_directories(trainbench_torch SYSTEM INTERFACE "${_torch}/include"
                                                          "${_torch}/include/torch/csrc/api/include")
target_compile_definitions(trainbench_torch INTERFACE USE_DISTRIBUTED USE_C10D_GLOO)
target_compile_features(trainbench_torch INTERFACE cxx_std_20)
target_link_libraries(trainbench_torch INTERFACE "-Wl,--no-as-needed" trainbench_torch_cpu "-Wl,--as-needed"
                                                 trainbench_torch_c10 Threads::Threads)
foreach(_d ${TRAINBENCH_TORCH_LIBRARY_DIRS})
  target_link_options(trainbench_torch INTERFACE "LINKER:-rpath,${_d}")
endforeach()
