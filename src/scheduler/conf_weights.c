/*
 * The "weights" key of the configuration: each user's share in the fair
 * share between users, relative to the others (1 when not given).
 *
 *   "weights": { "users":  { "alice": 2, "1001": 3 },
 *                "groups": { "ml-team": 2 } }
 *
 * Names are resolved once, when the file is read (a name that does not
 * resolve is an error, like a typo in any other key), so that no lookup
 * through NSS ever blocks the event loop while a client registers.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "conf.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* A group with more listed members than this is refused: the list is
 * searched at each registration. */
#define CONF_GROUP_MEMBERS_MAX 65536

void conf_weights_free(struct conf *c)
{
	for (size_t i = 0; i < c->n_weights; i++)
		free(c->weights[i].members);
	free(c->weights);
	c->weights = NULL;
	c->n_weights = 0;
}

/* "1001" is an id; anything else is a name. */
static int numeric_id(const char *s, uint32_t *id)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX - 1)
		return 0;
	*id = (uint32_t)v;
	return 1;
}

static int group_members(struct conf_weight *w, const struct group *gr,
			 char *err, size_t errlen)
{
	size_t n = 0;

	while (gr->gr_mem[n] != NULL)
		n++;
	if (n > CONF_GROUP_MEMBERS_MAX)
		ERR("weights.groups.%s: more than %d members", w->name,
		    CONF_GROUP_MEMBERS_MAX);
	w->members = calloc(n ? n : 1, sizeof(*w->members));
	if (w->members == NULL)
		ERR("weights: out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct passwd *pw = getpwnam(gr->gr_mem[i]);

		/* A member without an account has no processes. */
		if (pw != NULL)
			w->members[w->n_members++] = (uint32_t)pw->pw_uid;
	}
	return 0;
}

/* Resolve one entry's name; a group's member list comes with it. */
static int resolve(struct conf_weight *w, char *err, size_t errlen)
{
	const struct group *gr;
	const struct passwd *pw;
	int numeric = numeric_id(w->name, &w->id);

	if (!w->group) {
		if (numeric)
			return 0;
		pw = getpwnam(w->name);
		if (pw == NULL)
			ERR("weights.users: no user \"%s\"", w->name);
		w->id = (uint32_t)pw->pw_uid;
		return 0;
	}
	gr = numeric ? getgrgid((gid_t)w->id) : getgrnam(w->name);
	if (gr == NULL && !numeric)
		ERR("weights.groups: no group \"%s\"", w->name);
	if (gr == NULL)
		return 0; /* a gid without an entry: primary gid only */
	w->id = (uint32_t)gr->gr_gid;
	return group_members(w, gr, err, errlen);
}

static int parse_one(struct conf_weight *w, const cJSON *it, int group,
		     char *err, size_t errlen)
{
	const char *kind = group ? "groups" : "users";
	double d;

	memset(w, 0, sizeof(*w));
	w->group = group;
	if (strlen(it->string) >= sizeof(w->name) || it->string[0] == '\0')
		ERR("weights.%s: \"%.64s\" is not a %s name", kind, it->string,
		    group ? "group" : "user");
	snprintf(w->name, sizeof(w->name), "%s", it->string);
	d = cJSON_IsNumber(it) ? it->valuedouble : -1;
	if (d < 1 || d > SCHED_WEIGHT_MAX || d != (double)(uint32_t)d)
		ERR("weights.%s.%s: must be a whole number from 1 to %d", kind,
		    w->name, SCHED_WEIGHT_MAX);
	w->weight = (uint32_t)d;
	return resolve(w, err, errlen);
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
			if (c->weights[i].group == group &&
			    strcmp(c->weights[i].name, it->string) == 0)
				ERR("weights.%s.%s: given twice", kind,
				    it->string);
		/* The entry counts before it is checked, so that
		 * conf_weights_free releases what a failed one holds. */
		c->n_weights++;
		if (parse_one(w, it, group, err, errlen))
			return -1;
		for (size_t i = 0; i + 1 < c->n_weights; i++)
			if (c->weights[i].group == group &&
			    c->weights[i].id == w->id)
				ERR("weights.%s.%s: the same %s as \"%s\"", kind,
				    w->name, group ? "group" : "user",
				    c->weights[i].name);
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

		if (cJSON_AddNumberToObject(kind[e->group], e->name,
					    e->weight) == NULL)
			return -1;
	}
	return 0;
}

uint32_t conf_weight_of(const struct conf *c, uint32_t uid, uint32_t gid)
{
	uint32_t best = 0;

	for (size_t i = 0; i < c->n_weights; i++) {
		const struct conf_weight *w = &c->weights[i];
		int match = 0;

		if (!w->group) {
			if (w->id == uid)
				return w->weight;
			continue;
		}
		match = w->id == gid;
		for (size_t j = 0; !match && j < w->n_members; j++)
			match = w->members[j] == uid;
		if (match && w->weight > best)
			best = w->weight;
	}
	return best ? best : SCHED_WEIGHT_DEFAULT;
}
