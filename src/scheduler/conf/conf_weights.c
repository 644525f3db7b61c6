/*
 * The "weights" key of the configuration: each user's share in the fair
 * share between users, relative to the others (1 when not given).
 *
 *   "weights": { "users":  { "alice": 2, "1001": 3 },
 *                "groups": { "ml-team": 2 } }
 *
 * Names are resolved once, when the file is read (conf_who.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "conf.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

void conf_weights_free(struct conf *c)
{
	for (size_t i = 0; i < c->n_weights; i++)
		conf_who_free(&c->weights[i].who);
	free(c->weights);
	c->weights = NULL;
	c->n_weights = 0;
}

static int parse_one(struct conf_weight *w, const cJSON *it, int group,
		     char *err, size_t errlen)
{
	const char *kind = group ? "weights.groups" : "weights.users";
	double d;

	memset(w, 0, sizeof(*w));
	if (conf_who_set(&w->who, it->string, group, kind, err, errlen))
		return -1;
	d = cJSON_IsNumber(it) ? it->valuedouble : -1;
	if (d < 1 || d > SCHED_WEIGHT_MAX || d != (double)(uint32_t)d)
		ERR("%s.%s: must be a whole number from 1 to %d", kind,
		    w->who.name, SCHED_WEIGHT_MAX);
	w->weight = (uint32_t)d;
	return 0;
}

static int parse_kind(struct conf *c, const cJSON *obj, int group,
		      char *err, size_t errlen)
{
	const char *kind = group ? "groups" : "users";
	const cJSON *it;

	if (!cJSON_IsObject(obj))
		ERR("weights.%s: must be an object of name to weight", kind);
	cJSON_ArrayForEach(it, obj) {
		struct conf_weight *w = &c->weights[c->n_weights];

		for (size_t i = 0; i < c->n_weights; i++)
			if (c->weights[i].who.group == group &&
			    strcmp(c->weights[i].who.name, it->string) == 0)
				ERR("weights.%s.%s: given twice", kind,
				    it->string);
		/* The entry counts before it is checked, so that
		 * conf_weights_free releases what a failed one holds. */
		c->n_weights++;
		if (parse_one(w, it, group, err, errlen))
			return -1;
		for (size_t i = 0; i + 1 < c->n_weights; i++)
			if (c->weights[i].who.group == group &&
			    c->weights[i].who.id == w->who.id)
				ERR("weights.%s.%s: the same %s as \"%s\"", kind,
				    w->who.name, group ? "group" : "user",
				    c->weights[i].who.name);
	}
	return 0;
}

int conf_weights_parse(struct conf *c, const cJSON *obj, char *err,
		       size_t errlen)
{
	const cJSON *it, *users = NULL, *groups = NULL;
	size_t n = 0;

	conf_weights_free(c);
	if (!cJSON_IsObject(obj))
		ERR("weights: must be an object with \"users\" and/or "
		    "\"groups\"");
	cJSON_ArrayForEach(it, obj) {
		const cJSON **slot = strcmp(it->string, "users") == 0 ? &users :
				     strcmp(it->string, "groups") == 0 ? &groups :
				     NULL;

		if (slot == NULL)
			ERR("weights.%s: unknown key (\"users\" or \"groups\")",
			    it->string);
		if (*slot != NULL)
			ERR("weights.%s: given twice", it->string);
		*slot = it;
		n += (size_t)cJSON_GetArraySize(it);
	}
	c->weights = calloc(n ? n : 1, sizeof(*c->weights));
	if (c->weights == NULL)
		ERR("weights: out of memory");
	if (users != NULL && parse_kind(c, users, 0, err, errlen))
		return -1;
	if (groups != NULL && parse_kind(c, groups, 1, err, errlen))
		return -1;
	return 0;
}

int conf_weights_json(cJSON *o, const struct conf *c)
{
	cJSON *w = cJSON_AddObjectToObject(o, "weights");
	cJSON *kind[2];

	if (w == NULL)
		return -1;
	kind[0] = cJSON_AddObjectToObject(w, "users");
	kind[1] = cJSON_AddObjectToObject(w, "groups");
	if (kind[0] == NULL || kind[1] == NULL)
		return -1;
	for (size_t i = 0; i < c->n_weights; i++) {
		const struct conf_weight *e = &c->weights[i];

		if (cJSON_AddNumberToObject(kind[e->who.group], e->who.name,
					    e->weight) == NULL)
			return -1;
	}
	return 0;
}

uint32_t conf_weight_of(const struct conf *c, uint32_t uid)
{
	uint32_t best = 0;

	for (size_t i = 0; i < c->n_weights; i++) {
		const struct conf_weight *w = &c->weights[i];

		if (!conf_who_match(&w->who, uid))
			continue;
		if (!w->who.group)
			return w->weight;
		if (w->weight > best)
			best = w->weight;
	}
	return best ? best : SCHED_WEIGHT_DEFAULT;
}
