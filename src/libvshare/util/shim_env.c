/*
 * The table of the shim's settings and its one reader: each type parsed
 * one way, each bad value reported one way.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "pcopy.h"
#include "shim_env.h"
#include "size.h"
#include "vshare/proto.h"

const struct shim_setting shim_settings[SET_COUNT] = {
#define S(id, t, ...) [SET_##id] = { .name = "VSHARE_" #id, \
				     .type = SHIM_T_##t, __VA_ARGS__ },
#include "shim_settings.def"
#undef S
};

static int parse_bool(const char *s, uint64_t *out)
{
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
	    !strcasecmp(s, "on"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcasecmp(s, "false") ||
		 !strcasecmp(s, "no") || !strcasecmp(s, "off"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* Digits only: strtoull alone would take leading white space and a sign
 * but refuse trailing white space. */
static int parse_num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* The index of s among choices ("a|b|c"), or -1. */
static int choice_index(const char *choices, const char *s)
{
	size_t n = strlen(s);
	int i = 0;

	for (const char *c = choices; c != NULL; i++) {
		const char *bar = strchr(c, '|');
		size_t len = bar != NULL ? (size_t)(bar - c) : strlen(c);

		if (len == n && strncmp(c, s, n) == 0)
			return i;
		c = bar != NULL ? bar + 1 : NULL;
	}
	return -1;
}

int shim_setting_parse(const struct shim_setting *s, const char *text,
		       struct shim_set_val *out)
{
	int i;

	out->given = 0;
	out->u = s->dflt;
	out->s = s->dflt_s;
	switch (s->type) {
	case SHIM_T_BOOL:
		if (parse_bool(text, &out->u) != 0)
			return -1;
		break;
	case SHIM_T_INT:
	case SHIM_T_MS:
	case SHIM_T_US:
		if (parse_num(text, s->lo, s->hi, &out->u) != 0)
			return -1;
		break;
	case SHIM_T_SIZE:
	case SHIM_T_MEM: {
		int rc = vs_parse_size(text, VS_SIZE_LOWER_B |
				       (s->type == SHIM_T_MEM ?
					VS_SIZE_NEED_UNIT : 0), &out->u);

		if (rc != 0) {
			out->u = s->dflt;
			return rc == -2 ? -2 : -1;
		}
		break;
	}
	case SHIM_T_STRING:
		if (s->hi != 0 && strlen(text) > s->hi)
			return -1;
		out->s = text;
		break;
	case SHIM_T_ENUM:
		i = s->match != NULL ? s->match(text) :
		    choice_index(s->choices, text);
		if (i < 0)
			return -1;
		out->u = (uint64_t)i;
		break;
	}
	out->given = 1;
	return 0;
}

/* A size as the docs write it: the largest binary unit that divides it. */
static void size_text(uint64_t v, char *buf, size_t n)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v != 0 && u < 3 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%llu", (unsigned long long)v);
	else
		snprintf(buf, n, "%llu%c", (unsigned long long)v, units[u]);
}

void shim_setting_default(const struct shim_setting *s, char *buf, size_t n)
{
	const char *c = s->choices;

	if (s->dflt_doc != NULL) {
		snprintf(buf, n, "%s", s->dflt_doc);
	} else if (s->type == SHIM_T_SIZE || s->type == SHIM_T_MEM) {
		size_text(s->dflt, buf, n);
	} else if (s->type == SHIM_T_STRING) {
		snprintf(buf, n, "%s", s->dflt_s != NULL ? s->dflt_s : "");
	} else if (s->type == SHIM_T_ENUM) {
		for (uint64_t i = 0; c != NULL && i < s->dflt; i++)
			c = strchr(c, '|') != NULL ? strchr(c, '|') + 1 : NULL;
		snprintf(buf, n, "%.*s", c != NULL ? (int)strcspn(c, "|") : 0,
			 c != NULL ? c : "");
	} else {
		snprintf(buf, n, "%llu", (unsigned long long)s->dflt);
	}
}

/* What a value of s's type looks like, for the warning. */
static void expected(const struct shim_setting *s, char *buf, size_t n)
{
	switch (s->type) {
	case SHIM_T_BOOL:
		snprintf(buf, n, "a boolean (1/0, true/false)");
		break;
	case SHIM_T_INT:
	case SHIM_T_MS:
	case SHIM_T_US:
		snprintf(buf, n, "a number%s in %llu..%llu",
			 s->type == SHIM_T_MS ? " of milliseconds" :
			 s->type == SHIM_T_US ? " of microseconds" : "",
			 (unsigned long long)s->lo, (unsigned long long)s->hi);
		break;
	case SHIM_T_SIZE:
	case SHIM_T_MEM:
		snprintf(buf, n, "a size (like 8G or 512M)");
		break;
	case SHIM_T_ENUM: {
		size_t len = (size_t)snprintf(buf, n, "one of");

		/* "a|b|c" as "one of a, b, c". */
		for (const char *c = s->choices; c != NULL && len < n; ) {
			int w = (int)strcspn(c, "|");

			len += (size_t)snprintf(buf + len, n - len, "%s %.*s",
						c == s->choices ? "" : ",", w, c);
			c = c[w] == '|' ? c + w + 1 : NULL;
		}
		break;
	}
	case SHIM_T_STRING:     /* only ever too long: read_setting says so */
		snprintf(buf, n, "shorter");
		break;
	}
}

static struct shim_set_val read_setting(enum shim_set_id id, int quiet)
{
	const struct shim_setting *s = &shim_settings[id];
	const char *text = secure_getenv(s->name);
	struct shim_set_val v = { .u = s->dflt, .s = s->dflt_s };
	char dflt[64], want[64], why[VS_SIZE_ERR_LEN];
	int rc;

	if (text == NULL || *text == '\0')
		return v;
	rc = shim_setting_parse(s, text, &v);
	if (rc == 0 || quiet)
		return v;
	shim_setting_default(s, dflt, sizeof(dflt));
	if (rc == -2 || s->type == SHIM_T_SIZE || s->type == SHIM_T_MEM) {
		log_warn("%s=%s; using the default (%s)", s->name,
			 vs_size_error(why, sizeof(why), text, rc), dflt);
		return v;
	}
	if (s->type == SHIM_T_STRING) {
		log_warn("%s is longer than %llu bytes; using the default (%s)",
			 s->name, (unsigned long long)s->hi, dflt);
		return v;
	}
	expected(s, want, sizeof(want));
	log_warn("%s=\"%s\" is not %s; using the default (%s)", s->name,
		 text, want, dflt);
	return v;
}

struct shim_set_val shim_setting(enum shim_set_id id)
{
	return read_setting(id, 0);
}

struct shim_set_val shim_setting_quiet(enum shim_set_id id)
{
	return read_setting(id, 1);
}

int shim_usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return (int)sysconf(_SC_NPROCESSORS_ONLN);
	n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}
