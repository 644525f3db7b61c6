/*
 * SIGHUP: read the configuration file again. A file that does not parse
 * or names a group that does not exist changes nothing: the running
 * configuration stays and the error is logged. What is set up once at
 * start (the socket's path, group and mode, the lock page, the metrics
 * listener: the table's RESTART keys) needs a restart.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "srv.h"

/* Keep the settings set up at start (the table's RESTART keys) as the
 * running daemon has them; say which changed. */
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

/*
 * What the reload left in force, which is not always the file's values: a
 * quantum or mode that vsharectl set and the file did not change stays.
 * The defaults (what GPUs attached from now on get), with the file's
 * value where it differs, then every GPU whose quantum or mode is not
 * the default.
 */
static void log_in_force(const struct srv *s, const struct conf *nc)
{
	char gpus[256] = "", file[96] = "";
	uint32_t tq_ms, mode;
	size_t n = 0;
	int used;

	sched_defaults(s->sched, &tq_ms, &mode);
	if (tq_ms != nc->tq_s * 1000u || mode != nc->mode)
		snprintf(file, sizeof(file), " (set by vsharectl; the file "
			 "says quantum %u s, mode %s)", nc->tq_s,
			 vs_mode_name(nc->mode));
	for (size_t i = 0; i < sched_gpu_count(s->sched); i++) {
		struct sched_gpu_info gi;

		sched_gpu_info(sched_gpu_at(s->sched, i), &gi);
		if (gi.tq_ms == tq_ms && gi.mode == mode)
			continue;
		used = snprintf(gpus + n, sizeof(gpus) - n, "; GPU %u: "
				"quantum %u s, mode %s", gi.index,
				gi.tq_ms / 1000u, vs_mode_name(gi.mode));
		if (used < 0 || (size_t)used >= sizeof(gpus) - n) {
			gpus[n] = '\0';  /* no half entry; the rest: status */
			break;
		}
		n += (size_t)used;
	}
	log_info("reloaded %s: quantum %u s, mode %s%s, max_clients %u%s",
		 s->conf_path, tq_ms / 1000u, vs_mode_name(mode), file,
		 nc->max_clients, gpus);
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
	log_in_force(s, s->conf);
	return 0;
}
