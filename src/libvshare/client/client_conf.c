/*
 * The scheduler client's VSHARE_* settings, read once at client_init. A
 * bad value is logged and the default used (shim_env.c); docs/gate.md
 * lists them all. The node's client configuration (shim_node.h) fixes
 * the socket and can require the scheduler.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"
#include "label.h"
#include "log.h"
#include "shim_env.h"
#include "shim_node.h"

/* The client's state is defined here, with its settings, in the object
 * that every other part of the client builds on. */
struct client_conn client_c = { .sock = -1, .sock_id = { .fd = -1 } };
struct client_global client_g;

#define CLIENT_IDLE_MS_DEFAULT  100u
#define CLIENT_FP_STEP_DEFAULT  (64ull << 20)
/* A wait this long is worth a line: well past a normal hand-off (idle_ms
 * plus a drain), well short of what looks like a hang. */
#define CLIENT_WAIT_NOTICE_MS_DEFAULT 1000u

/* The program's name for the scheduler's status: its comm, which is what
 * ps shows and is set before any constructor runs. */
static void default_label(char *out, size_t n)
{
	FILE *f = fopen("/proc/self/comm", "re");
	size_t len = 0;

	out[0] = '\0';
	if (f != NULL) {
		if (fgets(out, (int)n, f) == NULL)
			out[0] = '\0';
		fclose(f);
	}
	len = strcspn(out, "\n");
	out[len] = '\0';
	if (len == 0)
		snprintf(out, n, "%s", program_invocation_short_name);
}

/* The socket: where the node is configured (a client.conf is there),
 * its socket or the default one, never VSHARE_SOCKET, which would let a
 * user pick a scheduler of their own that sends no policy. */
static const char *socket_path(void)
{
	const char *env = shim_env_str("VSHARE_SOCKET", NULL);
	const char *node = shim_node.socket[0] != '\0' ? shim_node.socket :
			   VS_DEFAULT_SOCKET;

	if (!shim_node.loaded)
		return env != NULL ? env : VS_DEFAULT_SOCKET;
	if (env != NULL && strcmp(env, node) != 0)
		log_warn("VSHARE_SOCKET is ignored: %s configures this node "
			 "(socket %s)", VSHARE_CLIENT_CONF, node);
	return node;
}

/* Required when the node says so, whatever the environment says; the
 * environment may require it where the node does not. */
static int require_local(void)
{
	int env = shim_env_str("VSHARE_REQUIRE_SCHEDULER", NULL) == NULL ? -1 :
		  shim_env_bool("VSHARE_REQUIRE_SCHEDULER", 0);

	if (shim_node.require != 1)
		return env == 1;
	if (env == 0)
		log_warn("VSHARE_REQUIRE_SCHEDULER=0 is ignored: %s requires "
			 "the scheduler", VSHARE_CLIENT_CONF);
	return 1;
}

void client_conf_read(struct client_conf *c)
{
	const char *sock = socket_path();
	const char *label = shim_env_str("VSHARE_LABEL", NULL);
	const char *swap = shim_env_str("VSHARE_SWAP_OUT", "lazy");

	memset(c, 0, sizeof(*c));
	if (strlen(sock) >= sizeof(c->socket_path)) {
		log_warn("VSHARE_SOCKET is longer than a Unix socket path may be; "
			 "using %s", VS_DEFAULT_SOCKET);
		sock = VS_DEFAULT_SOCKET;
	}
	snprintf(c->socket_path, sizeof(c->socket_path), "%s", sock);
	if (label != NULL)
		snprintf(c->label, VS_LABEL_MAX, "%s", label);
	else
		default_label(c->label, VS_LABEL_MAX);
	/* The wire label allows UTF-8 text without control characters; the
	 * cut above may have split a character. */
	vs_label_clean(c->label);
	c->idle_ms = shim_env_u64("VSHARE_IDLE_MS", CLIENT_IDLE_MS_DEFAULT, 0,
				  3600u * 1000u);
	if (strcmp(swap, "eager") == 0) {
		c->swap_eager = 1;
	} else if (strcmp(swap, "lazy") != 0) {
		log_warn("VSHARE_SWAP_OUT=\"%s\" is not lazy or eager; using lazy",
			 swap);
	}
	c->require_local = require_local();
	c->require_sched = c->require_local;
	c->footprint_step = shim_env_size("VSHARE_FOOTPRINT_STEP",
					  CLIENT_FP_STEP_DEFAULT);
	c->wait_notice = shim_env_bool("VSHARE_WAIT_NOTICE", 1);
	/* At least 100 ms: a query right behind each REQUEST would double
	 * the traffic of every hand-off. */
	c->wait_notice_ms = shim_env_u64("VSHARE_WAIT_NOTICE_MS",
					 CLIENT_WAIT_NOTICE_MS_DEFAULT, 100,
					 3600u * 1000u);
	c->no_lock_page = !shim_env_bool("VSHARE_LOCK_PAGE", 1);
}
