# The libtorch the worker builds against: the pinned torch wheel from PyPI that scripts/torch.sh
# unpacks, in one of two flavours (TRAINBENCH_TORCH_FLAVOUR):
#   cpu   (default) libtorch_cpu: every CPU path, gloo; what the tests, the quickstart and the
#         trainbench/worker image run;
#   cuda  libtorch_cpu and libtorch_cuda with the nvidia-* wheels' CUDA 13 libraries, cuDNN and
#         NCCL: the trainbench/worker:VERSION-cuda image (docker/worker.Dockerfile,
#         TORCH_FLAVOUR=cuda). Built on a machine without a GPU or a CUDA toolkit: the worker has no
#         kernels of its own, so it needs the wheels' headers and libraries, not nvcc.
# Imported targets over the wheel's files rather than find_package(Torch): the wheel is the CUDA
# build, and its TorchConfig.cmake looks for a CUDA toolkit at configure time.
#   trainbench::torch  headers, libtorch_cpu (linked whole: its operators register when it loads)
#                      and libc10 (and, for cuda, libtorch_cuda, linked whole too, and libc10_cuda);
#                      C++20 (recent ATen headers need it); Gloo through c10d (the wheel ships
#                      ProcessGroupGloo.hpp but not gloo's own headers: Debian's libgloo-dev
#                      provides those, declarations only, the code is libtorch_cpu's).
#   TRAINBENCH_TORCH_FLAVOUR_SOURCE  worker/torch_cuda.cpp or worker/torch_cuda_none.cpp: the one
#                      file that differs between the flavours (it alone sees CUDA's headers, so
#                      the rest compile alike and share ccache's objects).
# TRAINBENCH_TORCH_DIR overrides the directory (one with torch/ and nvidia/ as the script lays out).
set(TRAINBENCH_TORCH_FLAVOUR "cpu" CACHE STRING "libtorch flavour the worker is built against: cpu or cuda")
set_property(CACHE TRAINBENCH_TORCH_FLAVOUR PROPERTY STRINGS cpu cuda)
if(NOT TRAINBENCH_TORCH_FLAVOUR MATCHES "^(cpu|cuda)$")
  message(FATAL_ERROR "TRAINBENCH_TORCH_FLAVOUR=${TRAINBENCH_TORCH_FLAVOUR}: must be cpu or cuda")
endif()
set(TRAINBENCH_TORCH_DIR "" CACHE PATH "Unpacked torch wheel (scripts/torch.sh); empty: ask scripts/torch.sh --path")
if(NOT TRAINBENCH_TORCH_DIR)
  execute_process(COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/torch.sh" --path ${TRAINBENCH_TORCH_FLAVOUR}
                  OUTPUT_VARIABLE _torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR "the worker needs the pinned libtorch: run scripts/torch.sh ${TRAINBENCH_TORCH_FLAVOUR} first (${_torch_err})")
  endif()
  set(TRAINBENCH_TORCH_DIR "${_torch_dir}")
endif()
set(_torch "${TRAINBENCH_TORCH_DIR}/torch")
# The cuda flavour's torch/include is a link to the cpu flavour's: resolved, both flavours compile
# with one include path (and share ccache's objects).
get_filename_component(_torch_include "${_torch}/include" REALPATH)
set(_need torch/include/torch/csrc/api/include/torch/torch.h torch/lib/libtorch_cpu.so torch/lib/libc10.so)
if(TRAINBENCH_TORCH_FLAVOUR STREQUAL "cuda")
  list(APPEND _need torch/lib/libtorch_cuda.so torch/lib/libc10_cuda.so nvidia/nccl/include/nccl.h)
endif()
foreach(_f ${_need})
  if(NOT EXISTS "${TRAINBENCH_TORCH_DIR}/${_f}")
    message(FATAL_ERROR "${_f} missing: TRAINBENCH_TORCH_DIR=${TRAINBENCH_TORCH_DIR} is not an unpacked torch wheel of flavour ${TRAINBENCH_TORCH_FLAVOUR}")
  endif()
endforeach()
file(STRINGS "${_torch}/version.py" _torch_version REGEX "^__version__")
string(REGEX REPLACE ".*'([^']+)'.*" "\\1" TRAINBENCH_TORCH_VERSION "${_torch_version}")
message(STATUS "libtorch ${TRAINBENCH_TORCH_VERSION} (${TRAINBENCH_TORCH_FLAVOUR}) from ${TRAINBENCH_TORCH_DIR}")

# libtorch_cpu links libcudart and libcupti (the kineto profiler) even on a CPU: the runtime
# finds them, and for cuda every nvidia-* library, through the worker's RUNPATH, in the
# nvidia/*/lib directories beside torch/.
file(GLOB _nvidia_lib_dirs LIST_DIRECTORIES true "${TRAINBENCH_TORCH_DIR}/nvidia/*/lib")
set(TRAINBENCH_TORCH_LIBRARY_DIRS "${_torch}/lib" ${_nvidia_lib_dirs})

function(_trainbench_torch_lib name file)
  add_library(${name} SHARED IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES IMPORTED_LOCATION "${_torch}/lib/${file}")
endfunction()
_trainbench_torch_lib(trainbench_torch_c10 libc10.so)
_trainbench_torch_lib(trainbench_torch_cpu libtorch_cpu.so)

add_library(trainbench_torch INTERFACE)
add_library(trainbench::torch ALIAS trainbench_torch)
target_include_directories(trainbench_torch SYSTEM INTERFACE "${_torch_include}"
                                                          "${_torch_include}/torch/csrc/api/include")
target_compile_definitions(trainbench_torch INTERFACE USE_DISTRIBUTED USE_C10D_GLOO)
target_compile_features(trainbench_torch INTERFACE cxx_std_20)
set(_whole trainbench_torch_cpu)
if(TRAINBENCH_TORCH_FLAVOUR STREQUAL "cuda")
  _trainbench_torch_lib(trainbench_torch_cuda libtorch_cuda.so)
  _trainbench_torch_lib(trainbench_torch_c10_cuda libc10_cuda.so)
  list(APPEND _whole trainbench_torch_cuda)
  set(_more trainbench_torch_c10_cuda)
  set(TRAINBENCH_TORCH_FLAVOUR_SOURCE ${PROJECT_SOURCE_DIR}/worker/torch_cuda.cpp)
  # Only the flavour's own file sees CUDA's and NCCL's headers (the nvidia-* wheels') and
  # ProcessGroupNCCL (USE_C10D_NCCL).
  file(GLOB _nvidia_include_dirs LIST_DIRECTORIES true "${TRAINBENCH_TORCH_DIR}/nvidia/*/include")
  set_source_files_properties(${TRAINBENCH_TORCH_FLAVOUR_SOURCE} PROPERTIES
                              INCLUDE_DIRECTORIES "${_nvidia_include_dirs}" COMPILE_DEFINITIONS "USE_C10D_NCCL;USE_CUDA")
else()
  set(TRAINBENCH_TORCH_FLAVOUR_SOURCE ${PROJECT_SOURCE_DIR}/worker/torch_cuda_none.cpp)
endif()
target_link_libraries(trainbench_torch INTERFACE "-Wl,--no-as-needed" ${_whole} "-Wl,--as-needed"
                                                 trainbench_torch_c10 ${_more} Threads::Threads)
foreach(_d ${TRAINBENCH_TORCH_LIBRARY_DIRS})
  target_link_options(trainbench_torch INTERFACE "LINKER:-rpath,${_d}")
endforeach()
