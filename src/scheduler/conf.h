/*
 * vshare-scheduler configuration: defaults in one place, a JSON file read
 * with cJSON, every value range-checked with an error that names the key.
 */
#ifndef VSHARE_CONF_H
#define VSHARE_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sched_policy.h"

#define CONF_DEFAULT_PATH     "/etc/vshare/scheduler.json"
#define CONF_GROUP_AUTO       "\x01auto"  /* the default group, if it exists */
#define CONF_DEF_SOCKET_GROUP "vshare"
#define CONF_DEF_ADMIN_GROUP  "vshare-admin"

#define CONF_TQ_S_DEFAULT     30u      /* seconds */
#define CONF_GRACE_MS_DEFAULT 5000u    /* after a hard drop */
#define CONF_GRACE_MS_MAX     3600000u
#define CONF_SOCKET_MODE_DEF  0660u
#define CONF_MAX_CLIENTS_DEF  16384u
/* With footprints clamped to SCHED_FP_MAX (2^44), 2^18 clients keep every
 * per-GPU sum below 2^62. */
#define CONF_MAX_CLIENTS_MAX  262144u
#define CONF_PATH_MAX         108      /* sizeof(sun_path) */
#define CONF_NAME_MAX         64

struct conf {
	uint32_t tq_s;
	uint32_t mode;              /* VS_MODE_* */
	uint64_t capacity;          /* bytes, 0: the memory the GPU reports */
	uint32_t grace_ms;
	int      skip_unresponsive;
	char     socket[CONF_PATH_MAX];     /* "" : not set in the file */
	char     socket_group[CONF_NAME_MAX]; /* "" none, CONF_GROUP_AUTO */
	uint32_t socket_mode;
	char     admin_group[CONF_NAME_MAX];
	int      status_public;     /* may non-admins read the status? */
	int      log_level;         /* enum log_level */
	uint32_t max_clients;
	struct sched_gpu_cfg *gpus; /* per-GPU overrides */
	size_t   n_gpus;
};

void conf_defaults(struct conf *c);
void conf_free(struct conf *c);

/* Parse JSON text over the current values. 0, or -1 with err filled. */
int conf_parse(struct conf *c, const char *text, char *err, size_t errlen);
/* Read a file: 0, -1 on error (err filled); a missing file is an error
 * unless !must_exist, when it returns 1 and changes nothing. */
int conf_load(struct conf *c, const char *path, int must_exist, char *err,
	      size_t errlen);

/* Resolve a group setting to a gid: 0 and *gid, 1 if none, -1 (err) if a
 * named group does not exist. The automatic default quietly becomes none
 * when its group does not exist. */
int conf_group(const char *setting, const char *dflt, gid_t *gid,
	       const char *key, char *err, size_t errlen);

/* The settings as JSON (for --print-config); malloc'd, NULL on failure. */
char *conf_to_json(const struct conf *c, const char *socket_path);

/* The policy's view of these settings (points into c). */
void conf_sched_cfg(const struct conf *c, struct sched_cfg *out);

#endif
