/*
 * The scheduler client's VSHARE_* settings, read once at client_init.
 * The table of every setting, its default and range is
 * util/shim_settings.def; a bad value is logged there and the default
 * used. The node's client configuration (shim_node.h) fixes the socket
 * and can require the scheduler.
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
	struct shim_set_val set = shim_setting(SET_SOCKET);
	const char *env = set.given ? set.s : NULL;
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
	struct shim_set_val set = shim_setting(SET_REQUIRE_SCHEDULER);
	int env = set.given ? (int)set.u : -1;

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
	struct shim_set_val label = shim_setting(SET_LABEL);

	memset(c, 0, sizeof(*c));
	/* The table refuses a longer VSHARE_SOCKET, and the node's socket
	 * is shorter too (shim_node.c). */
	_Static_assert(sizeof(c->socket_path) == 107 + 1,
		       "VSHARE_SOCKET's longest length in shim_settings.def");
	snprintf(c->socket_path, sizeof(c->socket_path), "%s", sock);
	/* A longer label is cut to what HELLO carries, between characters
	 * (vsharectl label cuts a Jupyter kernel's label the same way). */
	if (label.given)
		vs_label_cut(c->label, VS_LABEL_MAX, label.s);
	else
		default_label(c->label, VS_LABEL_MAX);
	/* The wire label allows UTF-8 text without control characters. */
	vs_label_clean(c->label);
	c->idle_ms = shim_set_u64(SET_IDLE_MS);
	c->idle_learn = (int)shim_set_u64(SET_IDLE_LEARN);
	c->klass = (uint32_t)shim_set_u64(SET_CLASS);
	c->swap_eager = shim_set_u64(SET_SWAP_OUT) == SHIM_SWAP_OUT_EAGER;
	c->require_local = require_local();
	c->require_sched = c->require_local;
	c->footprint_step = shim_set_u64(SET_FOOTPRINT_STEP);
	c->wait_notice = (int)shim_set_u64(SET_WAIT_NOTICE);
	/* At least 100 ms (the table's range): a query right behind each
	 * REQUEST would double the traffic of every hand-off. The default,
	 * 1 s, is well past a normal hand-off (idle_ms plus a drain), well
	 * short of what looks like a hang. */
	c->wait_notice_ms = shim_set_u64(SET_WAIT_NOTICE_MS);
	c->no_lock_page = !shim_set_u64(SET_LOCK_PAGE);
}
