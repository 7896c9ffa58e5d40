# The GPU part: gpu/ (device buffers, reduce/fill/check kernels), the NCCL
# transport (transport/nccl/) and the NCCL baselines (baselines/nccl_*).
# Built when the CUDA toolkit and NCCL are found under CUDA_HOME (default
# /usr/local/cuda); otherwise their no-CUDA alternatives are, which say
# "not built" wherever a scenario asks for a GPU, and everything else is
# unchanged. Defines gradex_gpu and the source lists the transport and the
# baselines add.
set(GRADEX_CUDA AUTO CACHE STRING "Build the CUDA/NCCL part: AUTO (when found), ON or OFF")
set_property(CACHE GRADEX_CUDA PROPERTY STRINGS AUTO ON OFF)

set(gradex_cuda_home "$ENV{CUDA_HOME}")
if(NOT gradex_cuda_home)
  set(gradex_cuda_home /usr/local/cuda)
endif()

set(gradex_cuda_found OFF)
if(NOT GRADEX_CUDA STREQUAL "OFF")
  find_program(gradex_nvcc nvcc HINTS ${gradex_cuda_home}/bin NO_DEFAULT_PATH)
  find_path(gradex_nccl_include nccl.h HINTS ${gradex_cuda_home}/include NO_DEFAULT_PATH)
  find_library(gradex_nccl_library nccl HINTS ${gradex_cuda_home}/lib64 ${gradex_cuda_home}/lib
               NO_DEFAULT_PATH)
  if(gradex_nvcc AND gradex_nccl_include AND gradex_nccl_library)
    set(gradex_cuda_found ON)
  elseif(GRADEX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GRADEX_CUDA=ON but nvcc, nccl.h or libnccl is missing under ${gradex_cuda_home}")
  endif()
endif()

set(gradex_nccl_transport_sources)
set(gradex_nccl_baseline_sources)
if(gradex_cuda_found)
  set(CMAKE_CUDA_COMPILER ${gradex_nvcc})
  # Two real architectures keep the build short: sm_80 (A100) and sm_90
  # (H100); other GPUs of compute capability 8.x and 9.x run the nearest
  # lower one's code. CUDA 13 builds for sm_75 and up.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know that nvcc 12 and later take C++20: told here.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
  add_library(gradex_nccl SHARED IMPORTED)
  set_target_properties(gradex_nccl PROPERTIES IMPORTED_LOCATION ${gradex_nccl_library}
                        INTERFACE_INCLUDE_DIRECTORIES ${gradex_nccl_include})

  file(GLOB gpu_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/gpu/*.cpp ${CMAKE_SOURCE_DIR}/gpu/*.cu)
  list(FILTER gpu_sources EXCLUDE REGEX "/no_cuda\\.cpp$")
  add_library(gradex_gpu STATIC ${gpu_sources})
  target_link_libraries(gradex_gpu PUBLIC gradex_common CUDA::cudart gradex_nccl)
  target_include_directories(gradex_gpu PUBLIC ${CMAKE_SOURCE_DIR})
  target_compile_definitions(gradex_gpu PUBLIC GRADEX_WITH_CUDA=1)
  # Warnings are errors in the device code and in nvcc's host pass too.
  # The project-wide -Wall -Wextra -Werror are host-compiler flags: nvcc
  # takes them through -Xcompiler. -march=native (GRADEX_NATIVE) stays
  # with g++.
  target_compile_options(gradex_gpu PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror>)
  set_property(TARGET gradex_gpu PROPERTY CUDA_SEPARABLE_COMPILATION OFF)

  file(GLOB gradex_nccl_transport_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/transport/nccl/*.cpp)
  list(FILTER gradex_nccl_transport_sources EXCLUDE REGEX "/no_nccl\\.cpp$")
  set(gradex_nccl_baseline_sources ${CMAKE_SOURCE_DIR}/baselines/nccl_schemes.cpp)
  message(STATUS "gradex: CUDA ${CUDAToolkit_VERSION} and NCCL (${gradex_nccl_library}): GPU part built")
else()
  add_library(gradex_gpu STATIC ${CMAKE_SOURCE_DIR}/gpu/no_cuda.cpp)
  target_link_libraries(gradex_gpu PUBLIC gradex_common)
  target_include_directories(gradex_gpu PUBLIC ${CMAKE_SOURCE_DIR})
  set(gradex_nccl_transport_sources ${CMAKE_SOURCE_DIR}/transport/nccl/no_nccl.cpp)
  set(gradex_nccl_baseline_sources ${CMAKE_SOURCE_DIR}/baselines/no_nccl_schemes.cpp)
  message(STATUS "gradex: no CUDA toolkit with NCCL under ${gradex_cuda_home} (or GRADEX_CUDA=OFF): "
                 "GPU part not built")
endif()
