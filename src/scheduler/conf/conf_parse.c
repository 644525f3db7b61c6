/*
 * The configuration's parser: the JSON file read, its keys checked
 * against the table of conf.c (CONF_KEYS) with their types and ranges,
 * and the "gpus" entries. Every error names the key, or the place in the
 * text where the JSON is broken.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "conf_int.h"
#include "size.h"
#include "log.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* The largest configuration file read. */
#define CONF_FILE_MAX (1 << 20)

/* An integer JSON number in [lo, hi]. */
static int get_int(const cJSON *it, const char *key, uint64_t lo, uint64_t hi,
		   uint64_t *out, char *err, size_t errlen)
{
	double v;

	if (!cJSON_IsNumber(it))
		ERR("%s: must be a number", key);
	v = it->valuedouble;
	if (v != floor(v) || v < (double)lo || v > (double)hi)
		ERR("%s: must be an integer from %llu to %llu", key,
		    (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)v;
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

/* Bytes: a number, or a string like "8G". GPU memory (mem) is read as
 * the shim reads its limits: a number with no unit below 1 MiB is a unit
 * left out ("40" for "40G"), refused, where 40 bytes would leave every
 * program out of memory. */
static int get_size(const cJSON *it, const char *key, int mem, uint64_t lo,
		    uint64_t hi, uint64_t *out, char *err, size_t errlen)
{
	char num[32], why[VS_SIZE_ERR_LEN];
	int rc;

	if (!cJSON_IsString(it)) {
		if (get_int(it, key, lo, hi, out, err, errlen) != 0)
			return -1;
		if (!mem || *out == 0 || *out >= VS_SIZE_MIN_PLAIN)
			return 0;
		snprintf(num, sizeof(num), "%llu", (unsigned long long)*out);
		ERR("%s: %s", key, vs_size_error(why, sizeof(why), num, -2));
	}
	rc = vs_parse_size(it->valuestring, mem ? VS_SIZE_NEED_UNIT : 0, out);
	if (rc != 0)
		ERR("%s: %s", key,
		    vs_size_error(why, sizeof(why), it->valuestring, rc));
	if (*out < lo || *out > hi)
		ERR("%s: %s is out of range (%llu to %llu bytes)", key,
		    it->valuestring, (unsigned long long)lo,
		    (unsigned long long)hi);
	return 0;
}

/* An octal string; the range of socket_mode ("0600" to "0777") is also
 * what keeps the owner's read and write. */
static int get_octal(const cJSON *it, const struct conf_key *k,
		     const char *key, uint64_t *out, char *err, size_t errlen)
{
	char *end;
	unsigned long v;

	if (!cJSON_IsString(it))
		ERR("%s: must be an octal string like \"%04llo\"", key,
		    (unsigned long long)k->dnum);
	errno = 0;
	v = strtoul(it->valuestring, &end, 8);
	if (errno || *end || end == it->valuestring || v < k->lo || v > k->hi)
		ERR("%s: must be octal from \"%04llo\" to \"%04llo\" with "
		    "owner read and write", key, (unsigned long long)k->lo,
		    (unsigned long long)k->hi);
	*out = v;
	return 0;
}

static int get_words(const cJSON *it, const char *key, int type,
		     uint64_t *out, char *err, size_t errlen)
{
	uint32_t m;
	int lv;

	if (type == CONF_T_MODE) {
		if (!cJSON_IsString(it) || vs_mode_parse(it->valuestring, &m))
			ERR("%s: must be \"auto\", \"on\" or \"off\"", key);
		*out = m;
		return 0;
	}
	if (type == CONF_T_POLICY) {
		if (!cJSON_IsString(it) || vs_policy_parse(it->valuestring, &m))
			ERR("%s: must be \"fair\" or \"fcfs\"", key);
		*out = m;
		return 0;
	}
	lv = cJSON_IsString(it) ? log_level_parse(it->valuestring) : -1;
	if (lv < 0)
		ERR("%s: must be \"error\", \"warn\", \"info\" or \"debug\"",
		    key);
	*out = (uint64_t)lv;
	return 0;
}

/* A number-like value of key k (named key in errors) into *v. */
static int parse_num(const struct conf_key *k, const cJSON *it,
		     const char *key, uint64_t *v, char *err, size_t errlen)
{
	switch (k->type) {
	case CONF_T_UINT:
		return get_int(it, key, k->lo, k->hi, v, err, errlen);
	case CONF_T_SIZE:
	case CONF_T_MEM:
		return get_size(it, key, k->type == CONF_T_MEM, k->lo, k->hi, v,
				err, errlen);
	case CONF_T_OCTAL:
		return get_octal(it, k, key, v, err, errlen);
	case CONF_T_BOOL:
		if (!cJSON_IsBool(it))
			ERR("%s: must be true or false", key);
		*v = (uint64_t)cJSON_IsTrue(it);
		return 0;
	default:
		return get_words(it, key, k->type, v, err, errlen);
	}
}

/* A top-level key into its field of c. */
static int parse_field(struct conf *c, const struct conf_key *k,
		       const cJSON *it, char *err, size_t errlen)
{
	char *f = (char *)c + k->off;
	uint64_t v;

	if (k->type == CONF_T_GROUP && cJSON_IsNull(it)) {
		/* null: the automatic default (the usual group if it
		 * exists, else none). */
		snprintf(f, k->size, "%s", CONF_GROUP_AUTO);
		return 0;
	}
	if (conf_is_text(k->type)) {
		if (get_str(it, k->name, f, k->size, err, errlen))
			return -1;
		if (k->type == CONF_T_PATH && f[0] != '/')
			ERR("%s: must be an absolute path", k->name);
		if (k->type == CONF_T_ADDR && f[0] != '\0') {
			struct sockaddr_storage ss;
			unsigned len;
			char why[128];

			if (conf_listen_parse(f, &ss, &len, why, sizeof(why)))
				ERR("%s: %s", k->name, why);
		}
		return 0;
	}
	if (parse_num(k, it, k->name, &v, err, errlen))
		return -1;
	conf_num_set(k->type, f, v);
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

/* One key of a "gpus" entry: a per-GPU key, scaled into g. */
static int parse_gpu_key(struct sched_gpu_cfg *g, const cJSON *it,
			 const char *key, char *err, size_t errlen)
{
	const struct conf_key *k = conf_key_find(it->string);
	uint64_t v;

	if (k == NULL || k->gpu_bit == 0)
		ERR("%s: unknown key", key);
	if (parse_num(k, it, key, &v, err, errlen))
		return -1;
	v *= k->gpu_scale;
	if (k->gpu_size == sizeof(uint64_t))
		*(uint64_t *)(void *)((char *)g + k->gpu_off) = v;
	else
		*(uint32_t *)(void *)((char *)g + k->gpu_off) = (uint32_t)v;
	g->set |= k->gpu_bit;
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
		snprintf(key, sizeof(key), "gpus.%s.%s", uuid, it->string);
		if (dup_key(it, err, errlen) ||
		    parse_gpu_key(g, it, key, err, errlen))
			return -1;
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
	free(c->gpus);
	c->gpus = NULL;
	c->n_gpus = 0;
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
	const struct conf_key *k = conf_key_find(it->string);

	if (k != NULL)
		return parse_field(c, k, it, err, errlen);
	if (strcmp(it->string, "gpus") == 0)
		return parse_gpus(c, it, err, errlen);
	if (strcmp(it->string, "weights") == 0)
		return conf_weights_parse(c, it, err, errlen);
	if (strcmp(it->string, "policy_users") == 0 ||
	    strcmp(it->string, "policy_groups") == 0)
		return conf_policy_parse(c, it, strcmp(it->string,
					 "policy_groups") == 0, err, errlen);
	ERR("%s: unknown key", it->string);
}

/* "line 3, column 7" of where cJSON stopped, for a syntax error. */
static void json_where_at(const char *text, const char *at, char *out,
			  size_t n)
{
	const char *p;
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

static void json_where(const char *text, char *out, size_t n)
{
	json_where_at(text, cJSON_GetErrorPtr(), out, n);
}

/* Anything but white space after the object is an error: a file that
 * two edits left with two objects must not load the first one quietly. */
static int trailing(const char *text, const char *end, char *err,
		    size_t errlen)
{
	char where[64];

	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	if (*end == '\0')
		return 0;
	json_where_at(text, end, where, sizeof(where));
	ERR("data after the JSON object, %s", where);
}

int conf_parse(struct conf *c, const char *text, char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(text, &end, 0), *it;
	char where[64];
	int rc = 0;

	if (root == NULL) {
		json_where(text, where, sizeof(where));
		ERR("not valid JSON: error %s", where);
	}
	if (trailing(text, end, err, errlen) != 0) {
		cJSON_Delete(root);
		return -1;
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

/* The whole file, NUL-terminated, in *text. Opened without blocking and
 * read only if it is a regular file: a FIFO (or a device) named as the
 * configuration would otherwise stop the daemon in open() or read() at a
 * reload, with every client waiting. 0, 1 (missing, and may be), -1. */
static int read_file(const char *path, int must_exist, char **text,
		     char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	size_t n = 0;
	char *t;

	if (fd < 0) {
		if (errno == ENOENT && !must_exist)
			return 1;
		ERR("%s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) != 0)
		st.st_mode = 0;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		ERR("%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" :
		    "not a regular file");
	}
	if (st.st_size > CONF_FILE_MAX || (t = malloc((size_t)st.st_size + 1))
	    == NULL) {
		close(fd);
		ERR("%s: larger than 1 MiB", path);
	}
	/* The size may change under us: read what there is, up to it. */
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, t + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	t[n] = '\0';
	if (memchr(t, '\0', n) != NULL) {
		free(t);
		ERR("%s: contains a NUL byte: not a JSON text file", path);
	}
	*text = t;
	return 0;
}

int conf_load(struct conf *c, const char *path, int must_exist, char *err,
	      size_t errlen)
{
	char *text = NULL;
	int rc = read_file(path, must_exist, &text, err, errlen);

	if (rc != 0)
		return rc;
	rc = conf_parse(c, text, err, errlen);
	free(text);
	if (rc != 0) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "%s: %s", path, tmp);
	}
	return rc;
}
