/*
 * The Slurm plugin's decisions (see vsp_conf.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "size.h"
#include "vshare/proto.h"
#include "vsp_conf.h"

#ifndef VSHARE_SHIM_PATH
#define VSHARE_SHIM_PATH "/usr/lib/vshare/libvshare.so"
#endif

struct vsp_option {
	const char *key;
	enum vsp_type type;
	size_t off;
	const char *def;
};

static const struct vsp_option options[] = {
#define X(key, type, field, def, what) \
	{ #key, type, offsetof(struct vsp_conf, field), def },
	VSP_OPTIONS(X)
#undef X
};

static int parse_steps(const char *v, int *out)
{
	static const char *const names[] = {
		[VSP_STEPS_SHARDS] = "shards", [VSP_STEPS_GPUS] = "gpus",
		[VSP_STEPS_ALL] = "all",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0)
			return *out = (int)i, 0;
	return -1;
}

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = { "yes", "1", "true", "on" };
	static const char *const no[] = { "no", "0", "false", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(v, no[i]) == 0)
			return *out = 0, 0;
	}
	return -1;
}

/* One option's value into its field; 0 or -1 (bad value). */
static int set_option(struct vsp_conf *c, const struct vsp_option *o,
		      const char *v)
{
	char *field = (char *)c + o->off;

	switch (o->type) {
	case VSP_T_PATH:
		if (v[0] != '/' || strlen(v) >= VSP_PATH_MAX)
			return -1;
		strcpy(field, v);
		return 0;
	case VSP_T_SIZE:
		/* GPU memory, in the shim's grammar (-2: no unit, below
		 * 1 MiB). */
		return vs_parse_size(v, VS_SIZE_NEED_UNIT,
				     (uint64_t *)(void *)field);
	case VSP_T_BOOL:
		return parse_bool(v, (int *)(void *)field);
	case VSP_T_STEPS:
		return parse_steps(v, (int *)(void *)field);
	}
	return -1;
}

static const struct vsp_option *find_option(const char *key, size_t len)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (strlen(options[i].key) == len &&
		    strncmp(options[i].key, key, len) == 0)
			return &options[i];
	return NULL;
}

int vsp_conf_parse(struct vsp_conf *c, int argc, char **argv,
		   char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (set_option(c, &options[i], options[i].def) != 0) {
			snprintf(err, errlen, "bad built-in default %s=%s",
				 options[i].key, options[i].def);
			return -1;
		}
	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		const struct vsp_option *o =
			eq ? find_option(argv[i], (size_t)(eq - argv[i])) : NULL;
		int rc;

		if (o == NULL) {
			snprintf(err, errlen, "unknown option '%s' (want KEY=VALUE "
				 "with KEY one of shim, socket, shard_mem, "
				 "require_scheduler, framework_defaults, "
				 "steps)", argv[i]);
			return -1;
		}
		rc = set_option(c, o, eq + 1);
		if (rc != 0 && o->type == VSP_T_SIZE) {
			char why[VS_SIZE_ERR_LEN];

			snprintf(err, errlen, "%s %s", o->key,
				 vs_size_error(why, sizeof(why), eq + 1, rc));
			return -1;
		}
		if (rc != 0) {
			snprintf(err, errlen, "bad value in '%s' (%s)", argv[i],
				 o->type == VSP_T_PATH ? "an absolute path" :
				 o->type == VSP_T_BOOL ? "yes or no" :
				 "shards, gpus or all");
			return -1;
		}
	}
	return 0;
}

int vsp_limit(uint64_t shards, uint64_t shard_mem, uint64_t *out)
{
	if (shard_mem != 0 && shards > UINT64_MAX / shard_mem)
		return -1;
	*out = shards * shard_mem;
	return 0;
}

int vsp_shards(const char *text, uint64_t *out)
{
	char *end;

	if (text == NULL || text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	*out = strtoull(text, &end, 10);
	return errno == 0 && *end == '\0' ? 0 : -1;
}

int vsp_limit_wins(const char *cur, uint64_t limit)
{
	uint64_t have;

	if (cur == NULL || cur[0] == '\0' ||
	    vs_parse_size(cur, VS_SIZE_LOWER_B | VS_SIZE_NEED_UNIT, &have) != 0)
		return 1;
	/* The shim takes 0 as "no limit": it is not lower than ours. */
	return have == 0 || have > limit;
}

static const char *step_name(uint32_t step, char *buf, size_t n)
{
	switch (step) {
	case VSP_STEP_BATCH: return "batch";
	case VSP_STEP_EXTERN: return "extern";
	case VSP_STEP_INTERACTIVE: return "interactive";
	}
	snprintf(buf, n, "%" PRIu32, step);
	return buf;
}

void vsp_label(char *out, size_t n, uint32_t job, uint32_t step,
	       const char *user, const char *own)
{
	char sbuf[16];
	size_t max = n < VS_LABEL_MAX ? n : VS_LABEL_MAX;
	int len;

	if (max == 0)
		return;
	len = snprintf(out, max, VSP_LABEL_PREFIX "%" PRIu32 ".%s:%s", job,
		       step_name(step, sbuf, sizeof(sbuf)), user);
	/* A label of ours came from the job's batch step, whose environment
	 * the job's own steps inherit: not the user's. */
	if (own == NULL || own[0] == '\0' ||
	    strncmp(own, VSP_LABEL_PREFIX, strlen(VSP_LABEL_PREFIX)) == 0)
		return;
	if (len >= 0 && (size_t)len + 1 < max)
		snprintf(out + len, max - (size_t)len, ":%s", own);
}

static int is_shim(const char *entry, size_t len)
{
	const char *base = entry;
	size_t nlen = strlen(VSP_SHIM_NAME);

	for (size_t i = 0; i < len; i++)
		if (entry[i] == '/')
			base = entry + i + 1;
	len -= (size_t)(base - entry);
	return len >= nlen && strncmp(base, VSP_SHIM_NAME, nlen) == 0 &&
	       (len == nlen || base[nlen] == '.');
}

static int append(char *out, size_t n, size_t *pos, const char *s, size_t len)
{
	size_t sep = *pos > 0;

	if (*pos + sep + len + 1 > n)
		return -1;
	if (sep)
		out[(*pos)++] = ':';
	memcpy(out + *pos, s, len);
	*pos += len;
	out[*pos] = '\0';
	return 0;
}

int vsp_preload(const char *cur, const char *shim, char *out, size_t n)
{
	size_t pos = 0, len;
	int placed = 0;

	if (n == 0)
		return -1;
	out[0] = '\0';
	/* ld.so splits LD_PRELOAD at colons and at spaces. */
	for (const char *p = cur ? cur : ""; *p; p += len) {
		p += strspn(p, ": \t");
		len = strcspn(p, ": \t");
		if (len == 0)
			continue;
		if (!is_shim(p, len)) {
			if (append(out, n, &pos, p, len) != 0)
				return -1;
		} else if (!placed) {
			if (append(out, n, &pos, shim, strlen(shim)) != 0)
				return -1;
			placed = 1;
		}
	}
	if (!placed && append(out, n, &pos, shim, strlen(shim)) != 0)
		return -1;
	return 0;
}

int vsp_class_parse(const char *text, char *err, size_t errlen)
{
	if (strcmp(text, "interactive") == 0)
		return VSP_CLASS_INTERACTIVE;
	if (strcmp(text, "batch") == 0)
		return VSP_CLASS_BATCH;
	snprintf(err, errlen, "--vshare-class '%s' is not a class (want "
		 "interactive or batch)", text);
	return -1;
}

const char *vsp_class_name(int cls)
{
	return cls == VSP_CLASS_INTERACTIVE ? "interactive" :
	       cls == VSP_CLASS_BATCH ? "batch" : "";
}

int vsp_mem_parse(const char *text, uint64_t *out, char *err, size_t errlen)
{
	char why[VS_SIZE_ERR_LEN];
	int rc = vs_parse_size(text, VS_SIZE_LOWER_B | VS_SIZE_NEED_UNIT, out);

	if (rc == 0)
		return 0;
	snprintf(err, errlen, "--vshare-mem %s",
		 vs_size_error(why, sizeof(why), text, rc));
	return -1;
}

/* A size in the largest binary unit that writes it exactly ("768M"), so
 * that a refusal shows the cap as the admin wrote shard_mem. */
static void size_text(uint64_t v, char *buf, size_t n)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v != 0 && u < 3 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%" PRIu64 "B", v);
	else
		snprintf(buf, n, "%" PRIu64 "%c", v, units[u]);
}

int vsp_step_limit(uint64_t cap, int asked, uint64_t want, const char *cur,
		   uint64_t *out, char *err, size_t errlen)
{
	char w[32], c[32];

	if (!asked) {
		if (cap == 0 || !vsp_limit_wins(cur, cap))
			return VSP_LIMIT_KEEP;
		*out = cap;
		return VSP_LIMIT_SET;
	}
	/* The shim reads 0 as no limit at all, which no cap allows. */
	if (cap != 0 && (want == 0 || want > cap)) {
		size_text(cap, c, sizeof(c));
		if (want == 0)
			snprintf(w, sizeof(w), "0 (no limit)");
		else
			size_text(want, w, sizeof(w));
		snprintf(err, errlen, "--vshare-mem %s is above the %s that this "
			 "step's GPU shards allow (shards x shard_mem)", w, c);
		return VSP_LIMIT_REFUSE;
	}
	*out = want;
	return VSP_LIMIT_SET;
}
