/*
 * SIGHUP: read the configuration file again. A file that does not parse
 * or names a group that does not exist changes nothing: the running
 * configuration stays and the error is logged. Settings bound to the
 * listening socket (its path, group and mode) need a restart.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "srv.h"

/* Keep the settings bound to the listening socket (the table's RESTART
 * keys) as the running daemon has them; say which changed. */
static void keep_socket_settings(const struct conf *old, struct conf *nc)
{
	char changed[128];

	if (conf_keep_restart(old, nc, changed, sizeof(changed)) > 0)
		log_warn("reload: %s take effect at the next restart", changed);
}

static uint32_t weight_of(void *arg, uint32_t uid, uint32_t gid)
{
	struct conf_policy p;

	/* Groups match by uid alone (conf_who.c). */
	(void)gid;
	conf_policy_of(arg, uid, &p);
	return p.weight;
}

int reload_conf(struct srv *s)
{
	struct conf nc;
	struct sched_cfg cfg, old;
	char err[512];
	gid_t admin_gid = 0, sock_gid;
	int rc, has_admin = 0;

	conf_defaults(&nc);
	rc = conf_load(&nc, s->conf_path, s->conf_must_exist, err, sizeof(err));
	/* socket_group applies at the next restart, but a group that does
	 * not exist is refused now rather than then. */
	if (rc >= 0)
		rc = conf_group(nc.socket_group, CONF_DEF_SOCKET_GROUP, &sock_gid,
				"socket_group", err, sizeof(err));
	if (rc >= 0) {
		rc = conf_group(nc.admin_group, CONF_DEF_ADMIN_GROUP, &admin_gid,
				"admin_group", err, sizeof(err));
		has_admin = rc == 0;
	}
	if (rc < 0) {
		log_error("reload: %s; the running configuration stays", err);
		conf_free(&nc);
		return -1;
	}
	keep_socket_settings(s->conf, &nc);
	conf_sched_cfg(&nc, &cfg);
	conf_sched_cfg(s->conf, &old);
	if (sched_reconfigure(s->sched, &old, &cfg) != 0) {
		log_error("reload: out of memory; the running configuration "
			  "stays");
		conf_free(&nc);
		return -1;
	}
	if (s->log_level_arg >= 0)
		nc.log_level = s->log_level_arg;
	log_set_level((enum log_level)nc.log_level);
	s->admin_gid = admin_gid;
	s->has_admin_gid = has_admin;
	snprintf(s->admin_group_name, sizeof(s->admin_group_name), "%s",
		 strcmp(nc.admin_group, CONF_GROUP_AUTO) == 0 ?
		 CONF_DEF_ADMIN_GROUP : nc.admin_group);
	conf_free(s->conf);
	*s->conf = nc;
	/* Every user's weight from the new file: a reload is the admin's
	 * word, over what vsharectl set-weight said since. */
	sched_reweigh(s->sched, weight_of, s->conf);
	log_info("reloaded %s: quantum %u s, mode %s, max_clients %u",
		 s->conf_path, nc.tq_s, vs_mode_name(nc.mode), nc.max_clients);
	return 0;
}
