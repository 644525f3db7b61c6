/*
 * vshare-scheduler configuration: a JSON file read with cJSON. Every key
 * is one row of the table in conf.c (CONF_KEYS), which gives its type,
 * default, unit, range and scope; defaults, parsing with range checks,
 * --print-config and what a reload keeps are made from that table. A
 * value out of range is refused with an error that names the key.
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

#define CONF_PATH_MAX         108      /* sizeof(sun_path) */
#define CONF_NAME_MAX         64
#define CONF_ADDR_MAX         64       /* "[v6 address]:port" and its NUL */
#define CONF_DEF_SLICE_MS     500

/* A user, or the members of a group (its members as the group database
 * lists them, and whoever has it as primary group), as the configuration
 * names them. Names are resolved when the file is read (conf_who.c). */
struct conf_who {
	int      group;             /* 0: a user, 1: a group */
	uint32_t id;                /* uid or gid */
	uint32_t *members;          /* a group's member uids */
	size_t   n_members;
	char     name[CONF_NAME_MAX]; /* as written, for --print-config */
};

/* A weight of the fair share. */
struct conf_weight {
	struct conf_who who;
	uint32_t weight;            /* 1..SCHED_WEIGHT_MAX */
};

/* An entry of "policy_users" or "policy_groups": what it sets. */
struct conf_pol {
	struct conf_who who;
	uint64_t mem_limit;         /* bytes per GPU, 0: none */
	int      has_limit;
	int      require;           /* the scheduler is required */
	int      has_require;
	uint32_t weight;            /* 0: not set */
	uint32_t klass;             /* CONF_CLASS_*, 0: not set */
	uint32_t budget_pct;        /* interactive budget, 0: not set */
	uint32_t cap_pct;           /* max_share_pct, 0: not set */
};
#define CONF_CLASS_BATCH       1u /* "class": "batch": never interactive */
#define CONF_CLASS_INTERACTIVE 2u /* may be interactive */

/* What the policy gives one peer (conf_policy_of). */
struct conf_policy {
	uint64_t mem_limit;         /* 0: none */
	int      require;
	uint32_t weight;            /* the policy's, else "weights", else 1 */
	int      interactive;       /* may have the interactive class */
	uint32_t budget_pct;        /* its interactive budget, 1..100 */
	uint32_t cap_pct;           /* max_share_pct, 0: no cap */
};

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
	int      lock_page;         /* share free GPUs in the lock page */
	int      log_level;         /* enum log_level */
	uint32_t max_clients;
	/* Limits against hostile peers (docs/scheduler.md, threat model). */
	uint32_t uid_conns;         /* connections of one uid */
	uint32_t uid_gpus;          /* distinct GPUs one uid attaches */
	uint32_t uid_requests;      /* requests of one uid waiting */
	uint32_t hello_ms;          /* to register (or send a whole frame) */
	uint32_t frame_ms;          /* to finish a frame once started */
	uint64_t outq_pause;        /* bytes queued: stop reading the peer */
	uint64_t outq_max;          /* bytes queued: drop the peer */
	uint64_t outq_total;        /* bytes queued to all peers */
	uint32_t policy;            /* SCHED_POLICY_* */
	uint32_t min_slice_ms;
	uint32_t halflife_s;
	uint32_t preempt_pct;
	uint32_t preempt_budget_pct;
	int      interactive;       /* users may be interactive by default */
	uint32_t interactive_budget_pct;
	uint32_t interactive_total_pct; /* the class's share of a GPU */
	uint32_t cap_window_s;
	char     metrics_listen[CONF_ADDR_MAX]; /* "" : no metrics over HTTP */
	uint32_t metrics_gpus;      /* series of GPUs nobody vouches for */
	struct sched_gpu_cfg *gpus; /* per-GPU overrides */
	size_t   n_gpus;
	struct conf_weight *weights; /* users first, then groups, file order */
	size_t   n_weights;
	struct conf_pol *pols;      /* policy_users, then policy_groups */
	size_t   n_pols;
};

/* How a key's value is written in the file. */
#define CONF_T_UINT  1  /* integer number in [lo, hi] (uint32_t) */
#define CONF_T_SIZE  2  /* bytes, a number or a string like "8G" (uint64_t) */
#define CONF_T_BOOL  3  /* true or false (int) */
#define CONF_T_PATH  4  /* absolute path (char[]) */
#define CONF_T_GROUP 5  /* group name, "" none, null automatic (char[]) */
#define CONF_T_OCTAL 6  /* octal string in [lo, hi] (uint32_t) */
#define CONF_T_MODE  7  /* "auto", "on", "off" (uint32_t VS_MODE_*) */
#define CONF_T_LEVEL 8  /* "error", "warn", "info", "debug" (int) */
#define CONF_T_POLICY 9 /* "fair", "fcfs" (uint32_t SCHED_POLICY_*) */
#define CONF_T_ADDR  10 /* "IPv4:port", "[IPv6]:port" or "" (char[]) */
#define CONF_T_MEM   11 /* GPU memory: a CONF_T_SIZE that must have a unit
			 * below 1 MiB, as the shim's limits (uint64_t) */

/* One row of the table. */
struct conf_key {
	const char *name;
	int         type;      /* CONF_T_* */
	size_t      off, size; /* the field in struct conf */
	uint64_t    dnum;      /* default of a number, bool, mode or level */
	const char *dstr;      /* default path; for a group, the group that
				* the automatic default uses if it exists */
	uint64_t    lo, hi;    /* range of a number */
	const char *unit;      /* of a number, "" where none */
	size_t      gpu_off;   /* per-GPU key: its field in struct */
	size_t      gpu_size;  /* sched_gpu_cfg */
	uint32_t    gpu_bit;   /* SCHED_GCFG_*; 0 for a global key */
	uint32_t    gpu_scale; /* per-GPU field = value * gpu_scale */
	int         restart;   /* applies at the next start, not at a reload */
};

/* The table: n rows, in the order of --print-config. */
const struct conf_key *conf_keys(size_t *n);

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

/* A listen address as metrics_listen takes it: a numeric IPv4 address
 * and a port ("127.0.0.1:9464") or a bracketed IPv6 one ("[::1]:9464"),
 * port 1 to 65535. No names: a lookup at start could hang or change.
 * 0 and *ss, *len; -1 with err filled. */
struct sockaddr_storage;
int conf_listen_parse(const char *s, struct sockaddr_storage *ss,
		      unsigned *len, char *err, size_t errlen);

/* The settings as JSON (for --print-config); malloc'd, NULL on failure. */
char *conf_to_json(const struct conf *c, const char *socket_path);

/* For a reload: the keys that apply only at the next start keep in nc
 * their running values from old. The names of those whose value in the
 * file changed go into changed (", " between them); returns how many. */
int conf_keep_restart(const struct conf *old, struct conf *nc, char *changed,
		      size_t n);

/* The policy's view of these settings (points into c). */
void conf_sched_cfg(const struct conf *c, struct sched_cfg *out);

/* conf_weights.c: the "weights" key, {"users": {NAME or UID: WEIGHT},
 * "groups": {NAME or GID: WEIGHT}}. */
struct cJSON;
int  conf_weights_parse(struct conf *c, const struct cJSON *obj, char *err,
			size_t errlen);
void conf_weights_free(struct conf *c);
/* Add "weights" to a --print-config object; 0 or -1. */
int  conf_weights_json(struct cJSON *o, const struct conf *c);
/* The weight of a peer: its user's entry, else the largest of its groups'
 * (their members by uid: conf_who.c), else SCHED_WEIGHT_DEFAULT. */
uint32_t conf_weight_of(const struct conf *c, uint32_t uid);

/* conf_who.c: a user or group by name or id ("1001"), resolved now;
 * 0, or -1 with err ("KEY: no user ..."). */
int  conf_who_set(struct conf_who *w, const char *name, int group,
		  const char *key, char *err, size_t errlen);
void conf_who_free(struct conf_who *w);
/* Whether a peer (by uid only: conf_who.c says why) is w, or a member of
 * w. */
int  conf_who_match(const struct conf_who *w, uint32_t uid);

/* conf_policy.c: the keys "policy_users" and "policy_groups", each
 * {NAME or ID: {"mem_limit": SIZE, "require": BOOL, "weight": N,
 * "class": "interactive" or "batch", "interactive_budget_pct": N,
 * "max_share_pct": N}}. */
int  conf_policy_parse(struct conf *c, const struct cJSON *obj, int group,
		       char *err, size_t errlen);
void conf_policy_free(struct conf *c);
/* Add both keys to a --print-config object; 0 or -1. */
int  conf_policy_json(struct cJSON *o, const struct conf *c);
/* A peer's policy: what its user's entry sets, and for what that entry
 * leaves unset, its groups' entries: the lowest memory limit, require
 * if any requires it, the largest weight. A weight set nowhere in the
 * policy comes from "weights" (conf_weight_of). */
void conf_policy_of(const struct conf *c, uint32_t uid,
		    struct conf_policy *out);

#endif
