/*
 * Configuration: one table of keys, each with its own checked parser.
 * Unknown keys are errors, so a typo does not silently keep a default.
 */
#include <errno.h>
#include <grp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "conf.h"
#include "size.h"
#include "log.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

void conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	c->tq_s = CONF_TQ_S_DEFAULT;
	c->mode = VS_MODE_AUTO;
	c->capacity = 0;
	c->grace_ms = CONF_GRACE_MS_DEFAULT;
	c->skip_unresponsive = 1;
	strcpy(c->socket_group, CONF_GROUP_AUTO);
	c->socket_mode = CONF_SOCKET_MODE_DEF;
	strcpy(c->admin_group, CONF_GROUP_AUTO);
	c->status_public = 1;
	c->log_level = LOG_LVL_INFO;
	c->max_clients = CONF_MAX_CLIENTS_DEF;
}

void conf_free(struct conf *c)
{
	free(c->gpus);
	c->gpus = NULL;
	c->n_gpus = 0;
}

/* An integer JSON number in [lo, hi]. */
static int get_int(const cJSON *it, const char *key, double lo, double hi,
		   uint64_t *out, char *err, size_t errlen)
{
	double v;

	if (!cJSON_IsNumber(it))
		ERR("%s: must be a number", key);
	v = it->valuedouble;
	if (v != floor(v) || v < lo || v > hi)
		ERR("%s: must be an integer from %.0f to %.0f", key, lo, hi);
	*out = (uint64_t)v;
	return 0;
}

static int get_bool(const cJSON *it, const char *key, int *out, char *err,
		    size_t errlen)
{
	if (!cJSON_IsBool(it))
		ERR("%s: must be true or false", key);
	*out = cJSON_IsTrue(it);
	return 0;
}

static int get_str(const cJSON *it, const char *key, char *out, size_t n,
		   char *err, size_t errlen)
{
	if (!cJSON_IsString(it))
		ERR("%s: must be a string", key);
	if (strlen(it->valuestring) >= n)
		ERR("%s: longer than %zu bytes", key, n - 1);
	strcpy(out, it->valuestring);
	return 0;
}

/* A group name, "" for none, or null for the automatic default (the
 * usual group if it exists, else none). */
static int get_group(const cJSON *it, const char *key,
		     char out[CONF_NAME_MAX], char *err, size_t errlen)
{
	if (cJSON_IsNull(it)) {
		strcpy(out, CONF_GROUP_AUTO);
		return 0;
	}
	return get_str(it, key, out, CONF_NAME_MAX, err, errlen);
}

static int get_tq(const cJSON *it, const char *key, uint32_t *out, char *err,
		  size_t errlen)
{
	uint64_t v;

	if (get_int(it, key, SCHED_TQ_MIN_S, SCHED_TQ_MAX_S, &v, err, errlen))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int get_mode(const cJSON *it, const char *key, uint32_t *out,
		    char *err, size_t errlen)
{
	if (!cJSON_IsString(it) || vs_mode_parse(it->valuestring, out) != 0)
		ERR("%s: must be \"auto\", \"on\" or \"off\"", key);
	return 0;
}

static int get_capacity(const cJSON *it, const char *key, uint64_t *out,
			char *err, size_t errlen)
{
	if (cJSON_IsString(it)) {
		if (vs_parse_size(it->valuestring, 0, out) != 0)
			ERR("%s: bad size \"%s\" (bytes, or like \"8G\")", key,
			    it->valuestring);
		return 0;
	}
	/* 2^53: the largest byte count a JSON number holds exactly. */
	return get_int(it, key, 0, 9007199254740992.0, out, err, errlen);
}

static int get_socket_mode(const cJSON *it, const char *key, uint32_t *out,
			   char *err, size_t errlen)
{
	char *end;
	unsigned long v;

	if (!cJSON_IsString(it))
		ERR("%s: must be an octal string like \"0660\"", key);
	errno = 0;
	v = strtoul(it->valuestring, &end, 8);
	if (errno || *end || end == it->valuestring || v > 0777 ||
	    (v & 0600) != 0600)
		ERR("%s: must be octal from \"0600\" to \"0777\" with owner "
		    "read and write", key);
	*out = (uint32_t)v;
	return 0;
}

/* A key given twice would silently keep the last value: refuse it, as
 * unknown keys are refused. */
static int dup_key(const cJSON *it, char *err, size_t errlen)
{
	for (const cJSON *p = it->prev; p != NULL && p->next != NULL; p = p->prev)
		if (strcmp(p->string, it->string) == 0)
			ERR("%s: given twice", it->string);
	return 0;
}

static int parse_gpu(struct sched_gpu_cfg *g, const cJSON *obj,
		     const char *uuid, char *err, size_t errlen)
{
	const cJSON *it;
	char key[160];

	if (vs_uuid_parse(uuid, g->uuid) != 0)
		ERR("gpus: \"%s\" is not a GPU UUID", uuid);
	if (!cJSON_IsObject(obj))
		ERR("gpus.%s: must be an object", uuid);
	cJSON_ArrayForEach(it, obj) {
		if (dup_key(it, err, errlen))
			return -1;
		snprintf(key, sizeof(key), "gpus.%s.%s", uuid, it->string);
		if (strcmp(it->string, "tq_s") == 0) {
			if (get_tq(it, key, &g->tq_ms, err, errlen))
				return -1;
			g->tq_ms *= 1000;
			g->set |= SCHED_GCFG_TQ;
		} else if (strcmp(it->string, "mode") == 0) {
			if (get_mode(it, key, &g->mode, err, errlen))
				return -1;
			g->set |= SCHED_GCFG_MODE;
		} else if (strcmp(it->string, "capacity") == 0) {
			if (get_capacity(it, key, &g->capacity, err, errlen))
				return -1;
			g->set |= SCHED_GCFG_CAP;
		} else {
			ERR("%s: unknown key", key);
		}
	}
	return 0;
}

static int parse_gpus(struct conf *c, const cJSON *obj, char *err,
		      size_t errlen)
{
	const cJSON *it;
	size_t n = (size_t)cJSON_GetArraySize(obj), i = 0;

	if (!cJSON_IsObject(obj))
		ERR("gpus: must be an object of GPU UUID to settings");
	conf_free(c);
	if (n == 0)
		return 0;
	c->gpus = calloc(n, sizeof(*c->gpus));
	if (c->gpus == NULL)
		ERR("gpus: out of memory");
	cJSON_ArrayForEach(it, obj) {
		if (dup_key(it, err, errlen) ||
		    parse_gpu(&c->gpus[i], it, it->string, err, errlen))
			return -1;
		i++;
	}
	c->n_gpus = n;
	return 0;
}

/* One top-level key. */
static int parse_key(struct conf *c, const cJSON *it, char *err, size_t errlen)
{
	const char *k = it->string;
	uint64_t v;

	if (strcmp(k, "tq_s") == 0)
		return get_tq(it, k, &c->tq_s, err, errlen);
	if (strcmp(k, "mode") == 0)
		return get_mode(it, k, &c->mode, err, errlen);
	if (strcmp(k, "capacity") == 0)
		return get_capacity(it, k, &c->capacity, err, errlen);
	if (strcmp(k, "grace_ms") == 0) {
		if (get_int(it, k, 0, CONF_GRACE_MS_MAX, &v, err, errlen))
			return -1;
		c->grace_ms = (uint32_t)v;
		return 0;
	}
	if (strcmp(k, "skip_unresponsive") == 0)
		return get_bool(it, k, &c->skip_unresponsive, err, errlen);
	if (strcmp(k, "status_public") == 0)
		return get_bool(it, k, &c->status_public, err, errlen);
	if (strcmp(k, "socket") == 0) {
		if (get_str(it, k, c->socket, sizeof(c->socket), err, errlen))
			return -1;
		if (c->socket[0] != '/')
			ERR("socket: must be an absolute path");
		return 0;
	}
	if (strcmp(k, "socket_group") == 0)
		return get_group(it, k, c->socket_group, err, errlen);
	if (strcmp(k, "admin_group") == 0)
		return get_group(it, k, c->admin_group, err, errlen);
	if (strcmp(k, "socket_mode") == 0)
		return get_socket_mode(it, k, &c->socket_mode, err, errlen);
	if (strcmp(k, "log_level") == 0) {
		if (!cJSON_IsString(it) ||
		    (c->log_level = log_level_parse(it->valuestring)) < 0)
			ERR("log_level: must be \"error\", \"warn\", \"info\" "
			    "or \"debug\"");
		return 0;
	}
	if (strcmp(k, "max_clients") == 0) {
		if (get_int(it, k, 1, CONF_MAX_CLIENTS_MAX, &v, err, errlen))
			return -1;
		c->max_clients = (uint32_t)v;
		return 0;
	}
	if (strcmp(k, "gpus") == 0)
		return parse_gpus(c, it, err, errlen);
	ERR("%s: unknown key", k);
}

/* "line 3, column 7" of where cJSON stopped, for a syntax error. */
static void json_where(const char *text, char *out, size_t n)
{
	const char *at = cJSON_GetErrorPtr(), *p;
	int line = 1, col = 1;

	if (at == NULL || at < text || at > text + strlen(text)) {
		snprintf(out, n, "somewhere");
		return;
	}
	for (p = text; p < at; p++) {
		col++;
		if (*p == '\n') {
			line++;
			col = 1;
		}
	}
	if (*at == '\0')
		snprintf(out, n, "at the end (line %d): unfinished", line);
	else
		snprintf(out, n, "at line %d, column %d", line, col);
}

int conf_parse(struct conf *c, const char *text, char *err, size_t errlen)
{
	cJSON *root = cJSON_Parse(text), *it;
	char where[64];
	int rc = 0;

	if (root == NULL) {
		json_where(text, where, sizeof(where));
		ERR("not valid JSON: error %s", where);
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		ERR("the top level must be a JSON object");
	}
	cJSON_ArrayForEach(it, root) {
		rc = dup_key(it, err, errlen);
		if (rc == 0)
			rc = parse_key(c, it, err, errlen);
		if (rc != 0)
			break;
	}
	cJSON_Delete(root);
	return rc;
}

int conf_load(struct conf *c, const char *path, int must_exist, char *err,
	      size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	char *text;
	long n;
	int rc;

	if (f == NULL) {
		if (errno == ENOENT && !must_exist)
			return 1;
		ERR("%s: %s", path, strerror(errno));
	}
	/* fopen opens a directory for reading; say what is wrong with it. */
	if (fstat(fileno(f), &st) != 0)
		st.st_mode = 0;
	if (!S_ISREG(st.st_mode)) {
		fclose(f);
		ERR("%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" :
		    "not a regular file");
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (1 << 20) ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		ERR("%s: unreadable or larger than 1 MiB", path);
	}
	text = malloc((size_t)n + 1);
	if (text == NULL || fread(text, 1, (size_t)n, f) != (size_t)n) {
		free(text);
		fclose(f);
		ERR("%s: read error", path);
	}
	fclose(f);
	text[n] = '\0';
	rc = conf_parse(c, text, err, errlen);
	free(text);
	if (rc != 0) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "%s: %s", path, tmp);
	}
	return rc;
}

int conf_group(const char *setting, const char *dflt, gid_t *gid,
	       const char *key, char *err, size_t errlen)
{
	int autodef = strcmp(setting, CONF_GROUP_AUTO) == 0;
	const char *name = autodef ? dflt : setting;
	struct group *gr;

	if (name[0] == '\0')
		return 1;
	gr = getgrnam(name);
	if (gr == NULL) {
		if (autodef)
			return 1;
		ERR("%s: no group named \"%s\"", key, name);
	}
	*gid = gr->gr_gid;
	return 0;
}

static const char *group_name(const char *setting, const char *dflt)
{
	gid_t gid;
	char err[128];

	if (strcmp(setting, CONF_GROUP_AUTO) != 0)
		return setting;
	return conf_group(setting, dflt, &gid, "", err, sizeof(err)) == 0 ?
	       dflt : "";
}

char *conf_to_json(const struct conf *c, const char *socket_path)
{
	cJSON *o = cJSON_CreateObject(), *gpus;
	char mode[8], uuid[VS_UUID_STR_LEN];
	static const char *const lv[] = { "error", "warn", "info", "debug" };
	char *text;

	if (o == NULL)
		return NULL;
	snprintf(mode, sizeof(mode), "%04o", c->socket_mode);
	cJSON_AddNumberToObject(o, "tq_s", c->tq_s);
	cJSON_AddStringToObject(o, "mode", vs_mode_name(c->mode));
	cJSON_AddNumberToObject(o, "capacity", (double)c->capacity);
	cJSON_AddNumberToObject(o, "grace_ms", c->grace_ms);
	cJSON_AddBoolToObject(o, "skip_unresponsive", c->skip_unresponsive);
	cJSON_AddStringToObject(o, "socket", socket_path);
	cJSON_AddStringToObject(o, "socket_group",
				group_name(c->socket_group, CONF_DEF_SOCKET_GROUP));
	cJSON_AddStringToObject(o, "socket_mode", mode);
	cJSON_AddStringToObject(o, "admin_group",
				group_name(c->admin_group, CONF_DEF_ADMIN_GROUP));
	cJSON_AddBoolToObject(o, "status_public", c->status_public);
	cJSON_AddStringToObject(o, "log_level", lv[c->log_level]);
	cJSON_AddNumberToObject(o, "max_clients", c->max_clients);
	gpus = cJSON_AddObjectToObject(o, "gpus");
	for (size_t i = 0; gpus && i < c->n_gpus; i++) {
		const struct sched_gpu_cfg *g = &c->gpus[i];
		cJSON *e;

		vs_uuid_format(g->uuid, uuid);
		e = cJSON_AddObjectToObject(gpus, uuid);
		if (e == NULL)
			continue;
		if (g->set & SCHED_GCFG_TQ)
			cJSON_AddNumberToObject(e, "tq_s", g->tq_ms / 1000);
		if (g->set & SCHED_GCFG_MODE)
			cJSON_AddStringToObject(e, "mode", vs_mode_name(g->mode));
		if (g->set & SCHED_GCFG_CAP)
			cJSON_AddNumberToObject(e, "capacity", (double)g->capacity);
	}
	text = cJSON_Print(o);
	cJSON_Delete(o);
	return text;
}

void conf_sched_cfg(const struct conf *c, struct sched_cfg *out)
{
	memset(out, 0, sizeof(*out));
	out->tq_ms = c->tq_s * 1000u;
	out->mode = c->mode;
	out->capacity = c->capacity;
	out->grace_ms = c->grace_ms;
	out->skip_unresponsive = c->skip_unresponsive;
	out->gpus = c->gpus;
	out->n_gpus = c->n_gpus;
}
