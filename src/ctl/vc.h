/*
 * vsharectl internals: talking to the daemon (vc_io.c) and printing its
 * status for people (vc_print.c).
 */
#ifndef VSHARE_VC_H
#define VSHARE_VC_H

#include <stddef.h>
#include <stdint.h>

#include "vshare/proto.h"

/* Exit codes, for scripts. */
#define VC_EXIT_OK      0
#define VC_EXIT_ERROR   1  /* the daemon refused or failed */
#define VC_EXIT_USAGE   2
#define VC_EXIT_DOWN    3  /* the daemon is not running */

/* Connect to the daemon's socket: an fd, or -1 with the exit code in *ec
 * and a message printed. */
int vc_connect(const char *path, int *ec);

struct vc_reply {
	int32_t status;      /* VS_OK or VS_E_* */
	char   *text;        /* JSON or message, NUL-terminated, malloc'd */
	size_t  len;
};

/* Send one request and read its reply. 0, or an exit code (message
 * printed). */
int vc_call(int fd, uint16_t type, const void *payload, uint32_t len,
	    struct vc_reply *out);

/* Print a status JSON document for people; 0 or VC_EXIT_ERROR. */
int vc_print_status(const char *json);

#endif
