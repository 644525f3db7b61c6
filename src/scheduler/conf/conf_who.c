/*
 * Users and groups named in the configuration ("weights", "policy_users",
 * "policy_groups"): by name or by id, resolved once, when the file is
 * read. A name that does not resolve is an error, like a typo in any
 * other key, and no lookup through NSS ever blocks the event loop while
 * a client registers.
 *
 * A group matches a peer by uid alone: the users the group database
 * lists as members, and the users whose primary group (pw_gid in the
 * user database) it is, read here at load. Never by the peer's gid
 * (SO_PEERCRED): that is the effective gid, which the user picks with
 * sg(1) or newgrp(1) among their groups, so a user could step out of a
 * limited group. Not the process's own list (/proc/<pid>/status Groups)
 * either: the pid may be reused between accept and the read, and the
 * admin's database is what the admin configures. A user added to a
 * group needs a reload; a user database that cannot be enumerated
 * (getpwent(3), some LDAP setups) gives only the listed members.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* A group with more listed members than this is refused: the list is
 * searched at each registration. */
#define CONF_GROUP_MEMBERS_MAX 65536

void conf_who_free(struct conf_who *w)
{
	free(w->members);
	w->members = NULL;
	w->n_members = 0;
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

static int add_member(struct conf_who *w, size_t *cap, uint32_t uid)
{
	uint32_t *m;

	if (w->n_members == *cap) {
		if (*cap >= CONF_GROUP_MEMBERS_MAX)
			return -1;
		*cap = *cap ? *cap * 2 : 16;
		m = realloc(w->members, *cap * sizeof(*m));
		if (m == NULL)
			return -1;
		w->members = m;
	}
	w->members[w->n_members++] = uid;
	return 0;
}

/* The listed members, then the users whose primary group it is (one
 * pass over the user database, which rarely lists them as members). */
static int group_members(struct conf_who *w, const struct group *gr,
			 const char *key, char *err, size_t errlen)
{
	const struct passwd *pw;
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; gr != NULL && gr->gr_mem[i] != NULL; i++) {
		pw = getpwnam(gr->gr_mem[i]);
		/* A member without an account has no processes. */
		if (pw != NULL && add_member(w, &cap, (uint32_t)pw->pw_uid))
			ERR("%s.%s: out of memory or more than %d members",
			    key, w->name, CONF_GROUP_MEMBERS_MAX);
	}
	setpwent();
	while (rc == 0 && (pw = getpwent()) != NULL)
		if ((uint32_t)pw->pw_gid == w->id)
			rc = add_member(w, &cap, (uint32_t)pw->pw_uid);
	endpwent();
	if (rc != 0)
		ERR("%s.%s: out of memory or more than %d members", key,
		    w->name, CONF_GROUP_MEMBERS_MAX);
	return 0;
}

/* Resolve the name; a group's member list comes with it. */
static int resolve(struct conf_who *w, const char *key, char *err,
		   size_t errlen)
{
	const struct group *gr;
	const struct passwd *pw;
	int numeric = numeric_id(w->name, &w->id);

	if (!w->group) {
		if (numeric)
			return 0;
		pw = getpwnam(w->name);
		if (pw == NULL)
			ERR("%s: no user \"%s\"", key, w->name);
		w->id = (uint32_t)pw->pw_uid;
		return 0;
	}
	gr = numeric ? getgrgid((gid_t)w->id) : getgrnam(w->name);
	if (gr == NULL && !numeric)
		ERR("%s: no group \"%s\"", key, w->name);
	if (gr != NULL)
		w->id = (uint32_t)gr->gr_gid;
	/* A gid without an entry: the users whose primary group it is. */
	return group_members(w, gr, key, err, errlen);
}

int conf_who_set(struct conf_who *w, const char *name, int group,
		 const char *key, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->group = group;
	if (strlen(name) >= sizeof(w->name) || name[0] == '\0')
		ERR("%s: \"%.64s\" is not a %s name", key, name,
		    group ? "group" : "user");
	snprintf(w->name, sizeof(w->name), "%s", name);
	return resolve(w, key, err, errlen);
}

int conf_who_match(const struct conf_who *w, uint32_t uid)
{
	if (!w->group)
		return w->id == uid;
	for (size_t j = 0; j < w->n_members; j++)
		if (w->members[j] == uid)
			return 1;
	return 0;
}
