# Dependencies. Each failure names the Debian package that provides it, so
# a fresh machine can be fixed with one apt-get line.
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

function(vshare_require_pkg var module debpkg)
  pkg_check_modules(${var} QUIET IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR
      "${module} not found (pkg-config ${module}): apt-get install ${debpkg}")
  endif()
endfunction()

vshare_require_pkg(LIBUV libuv libuv1-dev)
vshare_require_pkg(CJSON libcjson libcjson-dev)
vshare_require_pkg(MHD libmicrohttpd libmicrohttpd-dev)
# sd_notify: the scheduler tells systemd when it is ready (Type=notify).
vshare_require_pkg(SYSTEMD libsystemd libsystemd-dev)
if(VSHARE_BUILD_TESTS)
  vshare_require_pkg(CMOCKA cmocka libcmocka-dev)
endif()

# Only the CUDA driver API headers are used. The shim must never link
# libcuda: it loads the real driver with dlopen at run time, so that it can
# sit in front of it.
if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cuda.h")
  find_path(VSHARE_CUDA_INCLUDE cuda.h
    HINTS ${CUDAToolkit_ROOT}/include /usr/local/cuda/include /usr/include)
  if(NOT VSHARE_CUDA_INCLUDE)
    message(FATAL_ERROR
      "cuda.h not found: install the CUDA toolkit headers "
      "(apt-get install nvidia-cuda-toolkit-headers, or NVIDIA's cuda-toolkit) "
      "or pass -DCUDAToolkit_ROOT=/path/to/cuda")
  endif()
  set(CUDAToolkit_INCLUDE_DIRS ${VSHARE_CUDA_INCLUDE})
endif()
add_library(vshare_cuda_headers INTERFACE)
target_include_directories(vshare_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
message(STATUS "vshare: CUDA headers in ${CUDAToolkit_INCLUDE_DIRS}")

find_package(Threads REQUIRED)

# The Kubernetes device plugin and DRA driver (src/k8s) are the C++ programs: gRPC's
# C++ library and the protobuf compiler with its gRPC plugin (Debian:
# libgrpc++-dev, libprotobuf-dev, protobuf-compiler-grpc). Without them it
# is not built.
pkg_check_modules(GRPCPP QUIET IMPORTED_TARGET grpc++ protobuf)
find_program(VSHARE_PROTOC protoc)
find_program(VSHARE_GRPC_CPP_PLUGIN grpc_cpp_plugin)
if(GRPCPP_FOUND AND VSHARE_PROTOC AND VSHARE_GRPC_CPP_PLUGIN)
  set(VSHARE_HAVE_GRPC ON)
else()
  set(VSHARE_HAVE_GRPC OFF)
endif()

# The DRA driver (src/k8s, vshare-dra-driver) reaches the API server with
# libcurl (Debian: libcurl4-openssl-dev); without it, only the device
# plugin is built.
pkg_check_modules(CURL QUIET IMPORTED_TARGET libcurl)
