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
