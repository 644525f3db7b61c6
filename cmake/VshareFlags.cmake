set(VSHARE_WARNINGS -Wall -Wextra -Wshadow -Wformat=2 -Wformat-security
    -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith -Wundef
    -Wvla -Wnull-dereference -Wimplicit-fallthrough)
if(VSHARE_WERROR)
  list(APPEND VSHARE_WARNINGS -Werror)
endif()
add_compile_options(${VSHARE_WARNINGS})
add_compile_definitions(_GNU_SOURCE)

if(VSHARE_SANITIZE STREQUAL "address")
  set(VSHARE_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer)
elseif(VSHARE_SANITIZE STREQUAL "thread")
  set(VSHARE_SAN_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT VSHARE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "VSHARE_SANITIZE must be empty, 'address' or 'thread'")
endif()
if(VSHARE_SAN_FLAGS)
  add_compile_options(${VSHARE_SAN_FLAGS})
  add_link_options(${VSHARE_SAN_FLAGS})
endif()

# A sanitized libvshare.so preloaded into a program that is not itself
# sanitized needs the sanitizer runtime loaded first. Tests that preload the
# shim (or load the test driver into python) put VSHARE_SAN_PRELOAD at the
# front of LD_PRELOAD; it is empty in a normal build.
set(VSHARE_SAN_PRELOAD "")
if(VSHARE_SANITIZE STREQUAL "address")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE VSHARE_SAN_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
elseif(VSHARE_SANITIZE STREQUAL "thread")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libtsan.so
                  OUTPUT_VARIABLE VSHARE_SAN_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
