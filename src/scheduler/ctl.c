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
	case SCHED_ST_HOLDING: return "holding";
	case SCHED_ST_WAITING: return "waiting";
	default:            return "idle";
	}
}

static cJSON *gpu_json(const struct sched_gpu *g)
{
	struct sched_gpu_info gi;
	char uuid[VS_UUID_STR_LEN];
	cJSON *o = cJSON_CreateObject(), *hold, *queue;
	const struct sched_client *c;

	if (o == NULL)
		return NULL;
	sched_gpu_info(g, &gi);
	vs_uuid_format(gi.uuid, uuid);
	cJSON_AddStringToObject(o, "uuid", uuid);
	cJSON_AddNumberToObject(o, "index", gi.index);
	cJSON_AddStringToObject(o, "mode", vs_mode_name(gi.mode));
	cJSON_AddNumberToObject(o, "tq_s", gi.tq_ms / 1000);
	cJSON_AddNumberToObject(o, "capacity", (double)gi.capacity);
	cJSON_AddNumberToObject(o, "total_mem", (double)gi.total_mem);
	cJSON_AddNumberToObject(o, "footprint", (double)gi.footprint);
	cJSON_AddNumberToObject(o, "held", (double)gi.held);
	cJSON_AddBoolToObject(o, "oversubscribed", gi.footprint > gi.capacity);
	hold = cJSON_AddArrayToObject(o, "holders");
	queue = cJSON_AddArrayToObject(o, "queue");
	for (size_t i = 0; hold && (c = sched_gpu_holder(g, i)) != NULL; i++)
		cJSON_AddItemToArray(hold,
			cJSON_CreateNumber(sched_client_id(c)));
	for (size_t i = 0; queue && (c = sched_gpu_waiter(g, i)) != NULL; i++)
		cJSON_AddItemToArray(queue,
			cJSON_CreateNumber(sched_client_id(c)));
	return o;
}

static cJSON *client_json(const struct sched *s, const struct sched_client *c)
{
	struct sched_client_info ci;
	struct sched_member_info mi;
	char uuid[VS_UUID_STR_LEN];
	cJSON *o = cJSON_CreateObject(), *gpus;

	if (o == NULL)
		return NULL;
	sched_client_info(c, &ci);
	cJSON_AddNumberToObject(o, "id", ci.id);
	cJSON_AddNumberToObject(o, "pid", ci.cred.pid);
	cJSON_AddNumberToObject(o, "uid", ci.cred.uid);
	cJSON_AddNumberToObject(o, "gid", ci.cred.gid);
	cJSON_AddStringToObject(o, "label", ci.label);
	gpus = cJSON_AddArrayToObject(o, "gpus");
	for (size_t i = 0; gpus && sched_client_gpu(s, c, i, &mi) == 0; i++) {
		cJSON *e = cJSON_CreateObject();

		if (e == NULL)
			break;
		vs_uuid_format(mi.uuid, uuid);
		cJSON_AddStringToObject(e, "uuid", uuid);
		cJSON_AddNumberToObject(e, "managed", (double)mi.managed);
		cJSON_AddNumberToObject(e, "pinned", (double)mi.pinned);
		cJSON_AddStringToObject(e, "state", state_name(mi.state));
		cJSON_AddNumberToObject(e, "held_ms", (double)mi.held_ms);
		cJSON_AddNumberToObject(e, "waited_ms", (double)mi.waited_ms);
		cJSON_AddBoolToObject(e, "revoked", mi.revoked);
		cJSON_AddItemToArray(gpus, e);
	}
	return o;
}

static char *status_text(const struct sched *s, size_t max_clients,
			 size_t *omitted)
{
	cJSON *root = cJSON_CreateObject(), *gpus, *clients;
	const struct sched_client *c;
	size_t n = 0;
	char *text;

	if (root == NULL)
		return NULL;
	cJSON_AddNumberToObject(root, "version", 1);
	gpus = cJSON_AddArrayToObject(root, "gpus");
	clients = cJSON_AddArrayToObject(root, "clients");
	for (size_t i = 0; gpus && i < sched_gpu_count(s); i++)
		cJSON_AddItemToArray(gpus, gpu_json(sched_gpu_at(s, i)));
	for (c = sched_client_first(s); clients && c; c = sched_client_next(s, c))
		if (n++ < max_clients)
			cJSON_AddItemToArray(clients, client_json(s, c));
	*omitted = n > max_clients ? n - max_clients : 0;
	if (*omitted > 0)
		cJSON_AddNumberToObject(root, "clients_omitted", (double)*omitted);
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

/* The status document, at most max bytes: with more clients than fit,
 * the first ones (in order of arrival) and "clients_omitted", so that
 * the GPUs, their holders and queues are always shown. */
char *ctl_status_json(const struct sched *s, size_t max, size_t *len)
{
	size_t keep = sched_client_count(s), omitted;
	char *text;

	for (;;) {
		text = status_text(s, keep, &omitted);
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

static void on_set(struct conn *c, uint16_t type, const struct vs_admin_set *m)
{
	struct sched *s = c->srv->sched;
	char what[VS_UUID_STR_LEN + 16];
	int rc;

	describe(m, what, sizeof(what));
	if (type == VS_MSG_SET_TQ)
		rc = sched_set_tq(s, m->target, m->index, m->uuid, m->value);
	else
		rc = sched_set_mode(s, m->target, m->index, m->uuid, m->value);
	if (rc == VS_E_INVAL) {
		reply_msg(c, rc, "quantum must be %u to %u seconds",
			  SCHED_TQ_MIN_S, SCHED_TQ_MAX_S);
		return;
	}
	if (rc < 0) {
		reply_msg(c, rc, "no such GPU: %s", what);
		return;
	}
	if (type == VS_MSG_SET_TQ) {
		log_info("uid %u (pid %d) set the quantum to %u s for %s",
			 c->cred.uid, c->cred.pid, m->value, what);
		reply_msg(c, VS_OK, "quantum set to %u s for %s (%d attached)",
			  m->value, what, rc);
	} else {
		log_info("uid %u (pid %d) set mode %s for %s", c->cred.uid,
			 c->cred.pid, vs_mode_name(m->value), what);
		reply_msg(c, VS_OK, "mode set to %s for %s (%d attached)",
			  vs_mode_name(m->value), what, rc);
	}
}

static void on_status(struct conn *c)
{
	size_t len = 0;
	char *json = ctl_status_json(c->srv->sched,
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

void ctl_handle(struct conn *c, const struct vs_hdr *h, const void *payload)
{
	const struct conf *cf = c->srv->conf;

	if (h->type == VS_MSG_STATUS && (c->is_admin || cf->status_public)) {
		on_status(c);
		return;
	}
	if (!c->is_admin) {
		log_info("refused %s from uid %u (pid %d): not an admin",
			 vs_msg_lookup(h->type)->name, c->cred.uid, c->cred.pid);
		reply_msg(c, VS_E_PERM, "permission denied: admin requests "
			  "need root%s%s", c->srv->has_admin_gid ?
			  " or the admin group " : "",
			  c->srv->has_admin_gid ? c->srv->admin_group_name : "");
		return;
	}
	if (h->type == VS_MSG_STATUS)
		on_status(c);
	else
		on_set(c, h->type, payload);
}
