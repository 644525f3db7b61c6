/*
 * The protocol's defaults, for the C++ side: vshare/proto.h is a C
 * header (its layout checks are C11 _Static_assert), so what the plugin
 * needs from it is handed over here.
 */
#include "vshare/proto.h"

extern const char kp_default_socket[];
const char kp_default_socket[] = VS_DEFAULT_SOCKET;
