/*
 * Admin requests: status (a JSON document) and the runtime settings. The
 * caller's rights come from the socket (root or the admin group), checked
 * here before anything changes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "log.h"
#include "status_json.h"
#include "srv.h"

static void reply(struct conn *c, int32_t status, const char *text, size_t len)
{
	struct vs_reply *r;
	size_t total = sizeof(*r) + len;

	r = malloc(total);
	if (r == NULL) {
		conn_close(c);
		return;
	}
	r->status = status;
	r->json_len = (uint32_t)len;
	memcpy(r + 1, text, len);
	conn_send(c, VS_MSG_REPLY, r, (uint32_t)total);
	free(r);
}

static void reply_msg(struct conn *c, int32_t status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_msg(struct conn *c, int32_t status, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	reply(c, status, buf, (size_t)n);
}

static const char *state_name(enum sched_state st)
{
	switch (st) {
	case SCHED_ST_HOLDING: return VS_STATUS_HOLDING;
	case SCHED_ST_WAITING: return VS_STATUS_WAITING;
	default:               return VS_STATUS_IDLE;
	}
}

/* An object of table t from the values v, which it takes the arrays of;
 * NULL if out of memory. */
static cJSON *st_object(const struct vs_status_obj *t,
			const struct vs_st_val *v)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL) {
		vs_status_put(o, t, v);
		return o;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->keys[i].type == VS_ST_ARRAY)
			cJSON_Delete(v[i].arr);
	return NULL;
}

/* Client ids: holders (waiters 0) or the queue (1) of a GPU. */
static cJSON *id_array(const struct sched_gpu *g, int waiters)
{
	cJSON *a = cJSON_CreateArray();
	const struct sched_client *c;

	for (size_t i = 0; a != NULL; i++) {
		c = waiters ? sched_gpu_waiter(g, i) : sched_gpu_holder(g, i);
		if (c == NULL)
			break;
		cJSON_AddItemToArray(a, cJSON_CreateNumber(sched_client_id(c)));
	}
	return a;
}

/* A percentage to one decimal: enough for a person, stable for a diff. */
static double round1(double v)
{
	return (double)(int64_t)(v * 10.0 + 0.5) / 10.0;
}

static cJSON *gpu_json(const struct sched *s, const struct sched_gpu *g)
{
	struct sched_gpu_info gi;
	char uuid[VS_UUID_STR_LEN];
	struct vs_st_val v[VS_SG__N] = { 0 };

	sched_gpu_info(g, &gi);
	vs_uuid_format(gi.uuid, uuid);
	v[VS_SG_uuid].str = uuid;
	v[VS_SG_index].num = gi.index;
	v[VS_SG_mode].str = vs_mode_name(gi.mode);
	v[VS_SG_tq_s].num = gi.tq_ms / 1000;
	v[VS_SG_capacity].num = (double)gi.capacity;
	v[VS_SG_total_mem].num = (double)gi.total_mem;
	v[VS_SG_footprint].num = (double)gi.footprint;
	v[VS_SG_held].num = (double)gi.held;
	v[VS_SG_oversubscribed].bool_ = gi.footprint > gi.capacity;
	v[VS_SG_holders].arr = id_array(g, 0);
	v[VS_SG_queue].arr = id_array(g, 1);
	v[VS_SG_policy].str = vs_policy_name(gi.policy);
	v[VS_SG_min_slice_ms].num = gi.min_slice_ms;
	v[VS_SG_slice_ms].num = gi.slice_ms;
	v[VS_SG_swap_us].num = (double)gi.swap_us;
	v[VS_SG_preempt_cost_ms].num = (double)gi.cost_ms;
	v[VS_SG_index_from].str = gi.index_nvml ? VS_STATUS_INDEX_NVML :
				  VS_STATUS_INDEX_ATTACH;
	v[VS_SG_interactive_total_pct].num = gi.total_pct;
	v[VS_SG_interactive_used_pct].num = round1(sched_gpu_total_used(s, g));
	v[VS_SG_interactive_over].bool_ = gi.total_over;
	v[VS_SG_slice_max_ms].num = gi.slice_max_ms;
	v[VS_SG_preempt_cost_class_ms].num = (double)gi.class_cost_ms;
	v[VS_SG_use_from].str = gi.use_known ? VS_STATUS_USE_NVML :
				VS_STATUS_USE_NONE;
	return st_object(&vs_status_gpu, v);
}

static cJSON *member_json(const struct sched_member_info *mi)
{
	char uuid[VS_UUID_STR_LEN];
	struct vs_st_val v[VS_SM__N] = { 0 };

	vs_uuid_format(mi->uuid, uuid);
	v[VS_SM_uuid].str = uuid;
	v[VS_SM_managed].num = (double)mi->managed;
	v[VS_SM_pinned].num = (double)mi->pinned;
	v[VS_SM_state].str = mi->took ? VS_STATUS_TOOK : state_name(mi->state);
	v[VS_SM_held_ms].num = (double)mi->held_ms;
	v[VS_SM_waited_ms].num = (double)mi->waited_ms;
	v[VS_SM_revoked].bool_ = mi->revoked;
	v[VS_SM_recent_ms].num = (double)mi->recent_ms;
	v[VS_SM_user_recent_ms].num = (double)mi->user_recent_ms;
	v[VS_SM_weight].num = mi->weight;
	v[VS_SM_wait_why].str = sched_why_name(mi->why);
	v[VS_SM_position].num = mi->position;
	v[VS_SM_eta_ms].num = mi->eta_ms == SCHED_ETA_UNKNOWN ? -1 :
			      (double)mi->eta_ms;
	v[VS_SM_class].str = vs_class_name(mi->klass);
	v[VS_SM_budget_pct].num = mi->budget_pct;
	v[VS_SM_budget_used_pct].num = round1(mi->budget_used_pct);
	v[VS_SM_cap_pct].num = mi->cap_pct;
	v[VS_SM_cap_used_pct].num = round1(mi->cap_used_pct);
	v[VS_SM_total_pct].num = mi->total_pct;
	v[VS_SM_total_used_pct].num = round1(mi->total_used_pct);
	v[VS_SM_gpu_mem].num = mi->use_known ? (double)mi->dev_mem : -1;
	v[VS_SM_sm_pct].num = mi->use_known ? mi->sm_pct : -1;
	v[VS_SM_held_total_ms].num = (double)mi->held_total_ms;
	v[VS_SM_busy_ms].num = (double)mi->busy_ms;
	v[VS_SM_idle_ms].num = (double)mi->idle_ms;
	v[VS_SM_swapin_bytes].num = (double)mi->swapin_bytes;
	v[VS_SM_swapout_bytes].num = (double)mi->swapout_bytes;
	return st_object(&vs_status_member, v);
}

static cJSON *client_json(const struct sched *s, const struct names *names,
			  const struct sched_client *c)
{
	const char *name;
	struct sched_client_info ci;
	struct sched_member_info mi;
	struct vs_st_val v[VS_SC__N] = { 0 };
	cJSON *gpus = cJSON_CreateArray();

	sched_client_info(c, &ci);
	v[VS_SC_id].num = ci.id;
	v[VS_SC_pid].num = ci.cred.pid;
	v[VS_SC_uid].num = ci.cred.uid;
	v[VS_SC_gid].num = ci.cred.gid;
	v[VS_SC_label].str = ci.label;
	name = names_find(names, ci.label);
	v[VS_SC_name].str = name ? name : "";
	for (size_t i = 0; gpus && sched_client_gpu(s, c, i, &mi) == 0; i++)
		cJSON_AddItemToArray(gpus, member_json(&mi));
	v[VS_SC_gpus].arr = gpus;
	v[VS_SC_class].str = vs_class_name(ci.klass);
	v[VS_SC_unshared_ms].num = (double)ci.unshared_ms;
	v[VS_SC_unshared_why].str = ci.unshared_why ?
				    vs_unshared_name(ci.unshared_why) : "";
	return st_object(&vs_status_client, v);
}

static char *status_text(const struct sched *s, const struct names *names,
			 size_t max_clients, size_t *omitted)
{
	struct vs_st_val v[VS_SD__N] = { 0 };
	cJSON *root, *gpus = cJSON_CreateArray(), *clients = cJSON_CreateArray();
	const struct sched_client *c;
	size_t n = 0;
	char *text;

	for (size_t i = 0; gpus && i < sched_gpu_count(s); i++)
		cJSON_AddItemToArray(gpus, gpu_json(s, sched_gpu_at(s, i)));
	for (c = sched_client_first(s); clients && c; c = sched_client_next(s, c))
		if (n++ < max_clients)
			cJSON_AddItemToArray(clients, client_json(s, names, c));
	*omitted = n > max_clients ? n - max_clients : 0;
	v[VS_SD_version].num = VS_STATUS_VERSION;
	v[VS_SD_gpus].arr = gpus;
	v[VS_SD_clients].arr = clients;
	v[VS_SD_clients_omitted].num = (double)*omitted;
	v[VS_SD_protocol].num = VS_PROTO_VERSION;
	root = st_object(&vs_status_doc, v);
	if (root == NULL)
		return NULL;
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

/* The status document, at most max bytes: with more clients than fit,
 * the first ones (in order of arrival) and "clients_omitted", so that
 * the GPUs, their holders and queues are always shown. */
char *ctl_status_json(const struct sched *s, const struct names *names,
		      size_t max, size_t *len)
{
	size_t keep = sched_client_count(s), omitted;
	char *text;

	for (;;) {
		text = status_text(s, names, keep, &omitted);
		if (text == NULL)
			return NULL;
		*len = strlen(text);
		if (*len <= max || keep == 0)
			return text;
		free(text);
		/* Scale by the size per client, a little under to converge. */
		keep = (size_t)((double)keep * max / (double)*len * 0.95);
	}
}

static void describe(const struct vs_admin_set *m, char *out, size_t n)
{
	if (m->target & VS_TARGET_ALL) {
		snprintf(out, n, "all GPUs");
	} else if (m->target & VS_TARGET_INDEX) {
		snprintf(out, n, "GPU %u", m->index);
	} else {
		vs_uuid_format(m->uuid, out);
	}
}

/* The protocol's ranges and names are the policy's (sched_policy.h). */
_Static_assert(VS_SLICE_MIN_MS == SCHED_SLICE_MIN_MS &&
	       VS_SLICE_MAX_MS == SCHED_SLICE_MAX_MS &&
	       VS_WEIGHT_MAX == SCHED_WEIGHT_MAX &&
	       VS_POLICY_FAIR == SCHED_POLICY_FAIR &&
	       VS_POLICY_FCFS == SCHED_POLICY_FCFS,
	       "protocol and policy agree");

/* Whom a setting reached, for its reply: the clients attached to the one
 * GPU it names, or the number of GPUs when it is for all of them. */
static void reached(struct sched *s, const struct vs_admin_set *m,
		    int n_gpus, char *out, size_t n)
{
	const struct sched_gpu *g;
	struct sched_gpu_info gi;

	g = sched_gpu_target(s, m->target, m->index, m->uuid);
	if (g == NULL) {
		snprintf(out, n, "%d GPU%s attached", n_gpus,
			 n_gpus == 1 ? "" : "s");
		return;
	}
	sched_gpu_info(g, &gi);
	snprintf(out, n, "%zu client%s attached", gi.n_members,
		 gi.n_members == 1 ? "" : "s");
}

/* A per-GPU setting: the quantum, the mode or the minimum slice. */
static void on_set(struct conn *c, uint16_t type, const struct vs_admin_set *m)
{
	struct sched *s = c->srv->sched;
	char what[VS_UUID_STR_LEN + 16], who[48];
	int rc;

	describe(m, what, sizeof(what));
	if (type == VS_MSG_SET_TQ)
		rc = sched_set_tq(s, m->target, m->index, m->uuid, m->value);
	else if (type == VS_MSG_SET_SLICE)
		rc = m->value < VS_SLICE_MIN_MS || m->value > VS_SLICE_MAX_MS ?
		     VS_E_INVAL :
		     sched_set_slice(s, m->target, m->index, m->uuid, m->value);
	else
		rc = sched_set_mode(s, m->target, m->index, m->uuid, m->value);
	if (rc == VS_E_INVAL && type == VS_MSG_SET_SLICE) {
		reply_msg(c, rc, "slice must be %u to %u ms", VS_SLICE_MIN_MS,
			  VS_SLICE_MAX_MS);
		return;
	}
	if (rc == VS_E_INVAL) {
		reply_msg(c, rc, "quantum must be %u to %u seconds",
			  VS_TQ_MIN_S, VS_TQ_MAX_S);
		return;
	}
	if (rc < 0) {
		reply_msg(c, rc, "no such GPU: %s", what);
		return;
	}
	reached(s, m, rc, who, sizeof(who));
	if (type == VS_MSG_SET_TQ) {
		plog_info(c, "uid %u (pid %d) set the quantum to %u s for %s",
			  c->cred.uid, c->cred.pid, m->value, what);
		reply_msg(c, VS_OK, "quantum set to %u s for %s (%s)",
			  m->value, what, who);
	} else if (type == VS_MSG_SET_SLICE) {
		plog_info(c, "uid %u (pid %d) set the minimum slice to %u ms "
			  "for %s", c->cred.uid, c->cred.pid, m->value, what);
		reply_msg(c, VS_OK, "minimum slice set to %u ms for %s (%s)",
			  m->value, what, who);
	} else {
		plog_info(c, "uid %u (pid %d) set mode %s for %s", c->cred.uid,
			  c->cred.pid, vs_mode_name(m->value), what);
		reply_msg(c, VS_OK, "mode set to %s for %s (%s)",
			  vs_mode_name(m->value), what, who);
	}
}

/* The queue order of every GPU (the frame check took the value). */
static void on_set_policy(struct conn *c, const struct vs_admin_set *m)
{
	int rc = sched_set_policy(c->srv->sched, m->value);

	if (rc < 0) {
		reply_msg(c, rc, "policy must be fair or fcfs");
		return;
	}
	plog_info(c, "uid %u (pid %d) set the policy to %s", c->cred.uid,
		  c->cred.pid, vs_policy_name(m->value));
	reply_msg(c, VS_OK, "policy set to %s on every GPU",
		  vs_policy_name(m->value));
}

/* A user's weight: the uid is in `index`, and must have clients now
 * (a weight for later users belongs in the configuration). */
static void on_set_weight(struct conn *c, const struct vs_admin_set *m)
{
	int rc = VS_E_INVAL;

	if (m->value >= VS_WEIGHT_MIN && m->value <= VS_WEIGHT_MAX)
		rc = sched_uid_set_weight(c->srv->sched, m->index, m->value);
	if (rc == VS_E_INVAL) {
		reply_msg(c, rc, "weight must be %u to %u", VS_WEIGHT_MIN,
			  VS_WEIGHT_MAX);
		return;
	}
	if (rc < 0) {
		reply_msg(c, rc, "uid %u has no client now (a weight for "
			  "later users belongs in the configuration)",
			  m->index);
		return;
	}
	plog_info(c, "uid %u (pid %d) set the weight of uid %u to %u",
		  c->cred.uid, c->cred.pid, m->index, m->value);
	reply_msg(c, VS_OK, "weight of uid %u set to %u", m->index, m->value);
}

/* A name for a label's clients, or a prefix's names cleared: from the
 * Kubernetes device plugin (through vsharectl name), or any admin. */
static void on_set_name(struct conn *c, const struct vs_set_name *m)
{
	char label[VS_LABEL_ESC_SIZE(VS_NAME_LABEL_MAX)];
	char name[VS_LABEL_ESC_SIZE(VS_NAME_MAX)];
	size_t changed = 0;
	int rc = names_apply(&c->srv->names, m, &changed);

	if (rc == VS_E_LIMIT) {
		reply_msg(c, rc, "too many names (%d at most): clear a prefix "
			  "first", NAMES_MAX);
		return;
	}
	if (rc != VS_OK) {
		reply_msg(c, rc, "out of memory");
		return;
	}
	/* The log shows them escaped, as it shows every label. */
	vs_label_escape(m->label, label, sizeof(label));
	vs_label_escape(m->name, name, sizeof(name));
	if (changed > 0 && (m->flags & VS_NAME_CLEAR))
		plog_info(c, "uid %u cleared %zu name(s) of labels \"%s\"...",
			  c->cred.uid, changed, label);
	else if (changed > 0)
		plog_info(c, "uid %u named label \"%s\": \"%s\"", c->cred.uid,
			  label, name);
	reply_msg(c, VS_OK, "%zu name(s) changed", changed);
}

static void on_status(struct conn *c)
{
	size_t len = 0;
	char *json = ctl_status_json(c->srv->sched, c->srv->names,
				     VS_MAX_PAYLOAD - sizeof(struct vs_reply),
				     &len);

	if (json == NULL) {
		reply_msg(c, VS_E_INVAL, "out of memory");
		return;
	}
	if (len > VS_MAX_PAYLOAD - sizeof(struct vs_reply))
		reply_msg(c, VS_E_INVAL, "status larger than a frame (%zu bytes)",
			  len);
	else
		reply(c, VS_OK, json, len);
	free(json);
}

char *ctl_metrics_text(struct srv *s, int http, size_t *len)
{
	int totals = http && !s->conf->status_public;

	s->mx.conns = s->n_conns;
	s->mx.gpus_max = s->conf->metrics_gpus;
	s->mx.names = s->names;
	use_refresh(s);
	s->mx.totals_only = totals;
	return metrics_cached(totals ? &s->mcache_pub : &s->mcache, s->sched,
			      &s->mx, uv_now(s->loop), len);
}

/* The metrics, for node_exporter's textfile collector: the same text as
 * over HTTP, in one reply frame. */
static void on_metrics(struct conn *c)
{
	size_t len = 0;
	char *text = ctl_metrics_text(c->srv, 0, &len);

	if (text == NULL)
		reply_msg(c, VS_E_INVAL, "out of memory");
	else if (len > VS_MAX_PAYLOAD - sizeof(struct vs_reply))
		reply_msg(c, VS_E_INVAL, "metrics larger than a frame (%zu "
			  "bytes): read them over HTTP (metrics_listen)", len);
	else
		reply(c, VS_OK, text, len);
	free(text);
}

void ctl_handle(struct conn *c, const struct vs_hdr *h, const void *payload)
{
	const struct conf *cf = c->srv->conf;

	/* The metrics follow the status's rule: they show less than it
	 * does (totals per GPU and per uid, no pids or labels). */
	if ((h->type == VS_MSG_STATUS || h->type == VS_MSG_METRICS) &&
	    (c->is_admin || cf->status_public)) {
		if (h->type == VS_MSG_STATUS)
			on_status(c);
		else
			on_metrics(c);
		return;
	}
	if (!c->is_admin) {
		c->srv->mx.refused[METRICS_REFUSE_not_admin]++;
		/* Logged once per connection, then only counted: a peer
		 * sending admin requests in a loop must not fill the log. */
		if (!c->refused_once)
			plog_info(c, "refused %s from uid %u (pid %d): not an "
				  "admin (later refusals on this connection are "
				  "only counted)", vs_msg_lookup(h->type)->name,
				  c->cred.uid, c->cred.pid);
		c->refused_once = 1;
		reply_msg(c, VS_E_PERM, "permission denied: admin requests "
			  "need root%s%s", c->srv->has_admin_gid ?
			  " or the admin group " : "",
			  c->srv->has_admin_gid ? c->srv->admin_group_name : "");
		return;
	}
	if (h->type == VS_MSG_STATUS)
		on_status(c);
	else if (h->type == VS_MSG_SET_POLICY)
		on_set_policy(c, payload);
	else if (h->type == VS_MSG_SET_WEIGHT)
		on_set_weight(c, payload);
	else if (h->type == VS_MSG_SET_NAME)
		on_set_name(c, payload);
	else
		on_set(c, h->type, payload);
}
