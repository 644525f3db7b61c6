/*
 * The node's client configuration (/etc/vshare/client.conf): settings an
 * admin fixes for every program on the node, read by the shim before its
 * environment, which may only make them stricter. docs/operations.md
 * ("Mandatory sharing") describes it; the format is key = value lines:
 *
 *   # the scheduler every program uses; VSHARE_SOCKET is ignored
 *   socket = /run/vshare/scheduler.sock
 *   # wait for the scheduler rather than run unshared
 *   require_scheduler = yes
 *   # the most one process may allocate per GPU
 *   mem_limit = 8G
 *
 * The file is trusted only when it is a regular file (not a symbolic
 * link) that root owns, in a folder root owns, and neither may be
 * written by group or others: a file anyone could write would hand the
 * admin's settings to them. The shim fails closed: a file that is there
 * but untrusted, unreadable, longer than 8 KiB or holding a NUL byte
 * (what follows it could not be read) gives the strictest
 * settings (shim_node.strict) with one error, and a require_scheduler or
 * mem_limit line that does not parse binds as "yes" or as a limit no
 * allocation fits. Its path is fixed when the shim is built (the CMake
 * cache variable VSHARE_CLIENT_CONF): a path the environment could
 * choose would let a user pick a file without the admin's settings.
 */
#ifndef VSHARE_SHIM_NODE_H
#define VSHARE_SHIM_NODE_H

#include <stdint.h>
#include <sys/types.h>

#ifndef VSHARE_CLIENT_CONF
#define VSHARE_CLIENT_CONF "/etc/vshare/client.conf"
#endif

#define SHIM_NODE_PATH_MAX 108   /* sizeof(sun_path) */

/* The limit of a node whose limit cannot be known: no allocation fits. */
#define SHIM_NODE_MEM_REFUSE 1ull

struct shim_node {
	int      loaded;             /* a file is there: the admin's node */
	int      strict;             /* ...but untrusted: strictest settings */
	char     socket[SHIM_NODE_PATH_MAX]; /* "" : not set */
	int      require;            /* -1 not set, 0, 1 */
	uint64_t mem_limit;          /* bytes, 0: not set */
};

/* Read once by the shim's init (never at load: a program that does not
 * use CUDA reads nothing). */
extern struct shim_node shim_node;
void shim_node_read(void);

/* Read path into *out, trusting files owned by `owner` (root, 0, but for
 * the unit tests). 0 read, 1 no file, -1 there but not trusted or
 * unreadable (logged; *out holds the strictest settings). */
int shim_node_load(const char *path, uid_t owner, struct shim_node *out);

#endif
