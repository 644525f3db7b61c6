/*
 * The admin's policy per user and per group: "policy_users" and
 * "policy_groups". Each entry may set a memory limit per GPU (bytes, or
 * like "8G"; 0 lifts a group's limit for one user), whether the
 * scheduler is required, a weight for the fair share, whether the
 * user's programs may have the interactive class ("class": "interactive"
 * lets them, "batch" forbids it), their interactive budget, and a cap on
 * their share of a GPU's time:
 *
 *   "policy_users":  { "alice": { "mem_limit": 0, "weight": 2 } },
 *   "policy_groups": { "students": { "mem_limit": "8G", "require": true,
 *                                    "max_share_pct": 25 } }
 *
 * The scheduler sends each client its user's policy (VS_MSG_POLICY) at
 * registration and after each reload. The user's own entry wins for
 * what it sets; among the groups the strictest wins (the lowest limit,
 * require if any requires it, batch if any forbids the interactive
 * class, the lowest budget and cap) and, as in "weights", the largest
 * weight. What no entry sets comes from the node's keys ("interactive",
 * "interactive_budget_pct"; no cap).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "conf.h"
#include "size.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* 2^53: the largest byte count that a JSON number holds exactly. */
#define POL_LIMIT_MAX 9007199254740992ull

void conf_policy_free(struct conf *c)
{
	for (size_t i = 0; i < c->n_pols; i++)
		conf_who_free(&c->pols[i].who);
	free(c->pols);
	c->pols = NULL;
	c->n_pols = 0;
}

static int get_limit(struct conf_pol *p, const cJSON *v, const char *key,
		     char *err, size_t errlen)
{
	char num[32], why[VS_SIZE_ERR_LEN];
	const char *text = num;
	double d;
	int rc;

	/* The shim's grammar for a limit: a number with no unit below 1 MiB
	 * is a unit left out ("8" for "8G"), which as bytes would leave every
	 * program of the user out of memory. */
	if (cJSON_IsString(v)) {
		text = v->valuestring;
		rc = vs_parse_size(text, VS_SIZE_NEED_UNIT, &p->mem_limit);
		if (rc == 0 && p->mem_limit > POL_LIMIT_MAX)
			ERR("%s.mem_limit: \"%s\" is past the largest limit, "
			    "%llu bytes", key, text,
			    (unsigned long long)POL_LIMIT_MAX);
	} else {
		d = cJSON_IsNumber(v) ? v->valuedouble : -1;
		if (d < 0 || d > (double)POL_LIMIT_MAX ||
		    d != (double)(uint64_t)d)
			ERR("%s.mem_limit: must be bytes (a whole number, 0 "
			    "for none) or a size like \"8G\"", key);
		p->mem_limit = (uint64_t)d;
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)p->mem_limit);
		rc = p->mem_limit != 0 && p->mem_limit < VS_SIZE_MIN_PLAIN ?
		     -2 : 0;
	}
	if (rc != 0)
		ERR("%s.mem_limit: %s", key,
		    vs_size_error(why, sizeof(why), text, rc));
	p->has_limit = 1;
	return 0;
}

/* A percentage of 1 to 100. */
static int get_pct(uint32_t *out, const cJSON *v, const char *key,
		   char *err, size_t errlen)
{
	double d = cJSON_IsNumber(v) ? v->valuedouble : -1;

	if (d < 1 || d > 100 || d != (double)(uint32_t)d)
		ERR("%s.%s: must be a whole number from 1 to 100 (%%)", key,
		    v->string);
	*out = (uint32_t)d;
	return 0;
}

static int get_class(struct conf_pol *p, const cJSON *v, const char *key,
		     char *err, size_t errlen)
{
	if (cJSON_IsString(v) && strcmp(v->valuestring, "interactive") == 0)
		p->klass = CONF_CLASS_INTERACTIVE;
	else if (cJSON_IsString(v) && strcmp(v->valuestring, "batch") == 0)
		p->klass = CONF_CLASS_BATCH;
	else
		ERR("%s.class: must be \"interactive\" (its programs may have "
		    "the interactive class) or \"batch\" (they may not)", key);
	return 0;
}

/* One field of an entry: a row of this small table. */
static int parse_field(struct conf_pol *p, const cJSON *v, const char *key,
		       char *err, size_t errlen)
{
	double d;

	if (strcmp(v->string, "class") == 0)
		return get_class(p, v, key, err, errlen);
	if (strcmp(v->string, "interactive_budget_pct") == 0)
		return get_pct(&p->budget_pct, v, key, err, errlen);
	if (strcmp(v->string, "max_share_pct") == 0)
		return get_pct(&p->cap_pct, v, key, err, errlen);

	if (strcmp(v->string, "mem_limit") == 0)
		return get_limit(p, v, key, err, errlen);
	if (strcmp(v->string, "require") == 0) {
		if (!cJSON_IsBool(v))
			ERR("%s.require: must be true or false", key);
		p->require = cJSON_IsTrue(v);
		p->has_require = 1;
		return 0;
	}
	if (strcmp(v->string, "weight") == 0) {
		d = cJSON_IsNumber(v) ? v->valuedouble : -1;
		if (d < 1 || d > SCHED_WEIGHT_MAX || d != (double)(uint32_t)d)
			ERR("%s.weight: must be a whole number from 1 to %d",
			    key, SCHED_WEIGHT_MAX);
		p->weight = (uint32_t)d;
		return 0;
	}
	ERR("%s.%s: unknown key (\"mem_limit\", \"require\", \"weight\", "
	    "\"class\", \"interactive_budget_pct\" or \"max_share_pct\")",
	    key, v->string);
}

static int parse_entry(struct conf *c, struct conf_pol *p, const cJSON *it,
		       int group, char *err, size_t errlen)
{
	const char *kind = group ? "policy_groups" : "policy_users";
	char key[CONF_NAME_MAX + 32];
	const cJSON *v, *q;

	snprintf(key, sizeof(key), "%s.%.64s", kind, it->string);
	if (conf_who_set(&p->who, it->string, group, kind, err, errlen))
		return -1;
	for (size_t i = 0; i + 1 < c->n_pols; i++)
		if (c->pols[i].who.group == group &&
		    c->pols[i].who.id == p->who.id)
			ERR("%s: the same %s as \"%s\"", key,
			    group ? "group" : "user", c->pols[i].who.name);
	if (!cJSON_IsObject(it))
		ERR("%s: must be an object of settings (\"mem_limit\", "
		    "\"require\", \"weight\", \"class\", "
		    "\"interactive_budget_pct\", \"max_share_pct\")", key);
	cJSON_ArrayForEach(v, it) {
		for (q = it->child; q != v; q = q->next)
			if (strcmp(q->string, v->string) == 0)
				ERR("%s.%s: given twice", key, v->string);
		if (parse_field(p, v, key, err, errlen))
			return -1;
	}
	return 0;
}

int conf_policy_parse(struct conf *c, const cJSON *obj, int group, char *err,
		      size_t errlen)
{
	const char *kind = group ? "policy_groups" : "policy_users";
	size_t n = (size_t)cJSON_GetArraySize(obj), keep = 0;
	struct conf_pol *t;
	const cJSON *it;

	if (!cJSON_IsObject(obj))
		ERR("%s: must be an object of %s name to settings", kind,
		    group ? "group" : "user");
	/* A reparse of one kind replaces that kind's entries only. */
	for (size_t i = 0; i < c->n_pols; i++) {
		if (c->pols[i].who.group == group)
			conf_who_free(&c->pols[i].who);
		else
			c->pols[keep++] = c->pols[i];
	}
	c->n_pols = keep;
	t = realloc(c->pols, (keep + n + 1) * sizeof(*t));
	if (t == NULL)
		ERR("%s: out of memory", kind);
	c->pols = t;
	cJSON_ArrayForEach(it, obj) {
		struct conf_pol *p = &c->pols[c->n_pols];

		memset(p, 0, sizeof(*p));
		/* Counted before it is checked, so that conf_policy_free
		 * releases what a failed one holds. */
		c->n_pols++;
		if (parse_entry(c, p, it, group, err, errlen))
			return -1;
	}
	return 0;
}

static int entry_json(cJSON *kind, const struct conf_pol *p)
{
	cJSON *e = cJSON_AddObjectToObject(kind, p->who.name);
	char buf[24];

	if (e == NULL)
		return -1;
	if (p->has_limit) {
		snprintf(buf, sizeof(buf), "%llu",
			 (unsigned long long)p->mem_limit);
		if (cJSON_AddRawToObject(e, "mem_limit", buf) == NULL)
			return -1;
	}
	if (p->has_require && cJSON_AddBoolToObject(e, "require",
						    p->require) == NULL)
		return -1;
	if (p->weight && cJSON_AddNumberToObject(e, "weight",
						 p->weight) == NULL)
		return -1;
	if (p->klass && cJSON_AddStringToObject(e, "class",
			p->klass == CONF_CLASS_BATCH ? "batch" :
			"interactive") == NULL)
		return -1;
	if (p->budget_pct && cJSON_AddNumberToObject(e,
			"interactive_budget_pct", p->budget_pct) == NULL)
		return -1;
	if (p->cap_pct && cJSON_AddNumberToObject(e, "max_share_pct",
						  p->cap_pct) == NULL)
		return -1;
	return 0;
}

int conf_policy_json(cJSON *o, const struct conf *c)
{
	cJSON *kind[2];

	kind[0] = cJSON_AddObjectToObject(o, "policy_users");
	kind[1] = cJSON_AddObjectToObject(o, "policy_groups");
	if (kind[0] == NULL || kind[1] == NULL)
		return -1;
	for (size_t i = 0; i < c->n_pols; i++)
		if (entry_json(kind[c->pols[i].who.group], &c->pols[i]) != 0)
			return -1;
	return 0;
}

/* The strictest of two limits, where 0 is none. */
static uint64_t lower(uint64_t a, uint64_t b)
{
	if (a == 0)
		return b;
	return b != 0 && b < a ? b : a;
}

/* The classes and cap: the user's entry where it sets them, else the
 * groups', else the node's. */
static void class_of(const struct conf *c, const struct conf_pol *user,
		     const struct conf_pol *grp, struct conf_policy *out)
{
	uint32_t k = user && user->klass ? user->klass : grp->klass;

	out->interactive = k ? k == CONF_CLASS_INTERACTIVE : c->interactive;
	out->budget_pct = user && user->budget_pct ? user->budget_pct :
			  grp->budget_pct ? grp->budget_pct :
			  c->interactive_budget_pct;
	out->cap_pct = user && user->cap_pct ? user->cap_pct : grp->cap_pct;
}

void conf_policy_of(const struct conf *c, uint32_t uid,
		    struct conf_policy *out)
{
	const struct conf_pol *user = NULL;
	struct conf_pol grp;

	memset(&grp, 0, sizeof(grp));
	for (size_t i = 0; i < c->n_pols; i++) {
		const struct conf_pol *p = &c->pols[i];

		if (!conf_who_match(&p->who, uid))
			continue;
		if (!p->who.group) {
			user = p;
			continue;
		}
		if (p->has_limit)
			grp.mem_limit = grp.has_limit ?
				lower(grp.mem_limit, p->mem_limit) : p->mem_limit;
		grp.has_limit |= p->has_limit;
		grp.require |= p->has_require && p->require;
		if (p->weight > grp.weight)
			grp.weight = p->weight;
		if (p->klass > grp.klass && grp.klass != CONF_CLASS_BATCH)
			grp.klass = p->klass;
		if (p->klass == CONF_CLASS_BATCH)
			grp.klass = CONF_CLASS_BATCH;
		grp.budget_pct = (uint32_t)lower(grp.budget_pct, p->budget_pct);
		grp.cap_pct = (uint32_t)lower(grp.cap_pct, p->cap_pct);
	}
	class_of(c, user, &grp, out);
	out->mem_limit = user && user->has_limit ? user->mem_limit :
			 grp.mem_limit;
	out->require = user && user->has_require ? user->require :
		       grp.require;
	out->weight = user && user->weight ? user->weight : grp.weight;
	if (out->weight == 0)
		out->weight = conf_weight_of(c, uid);
}
