/*
 * Users and groups named in the configuration ("weights", "policy_users",
 * "policy_groups"): by name or by id, resolved once, when the file is
 * read. A name that does not resolve is an error, like a typo in any
 * other key, and no lookup through NSS ever blocks the event loop while
 * a client registers.
 *
 * A group matches a peer whose primary gid (SO_PEERCRED) is the group's,
 * or whose uid the group database lists as a member: the supplementary
 * groups getgrouplist(3) would give for the uid, read here at load. Not
 * the process's own list (/proc/<pid>/status Groups): the pid may be
 * reused between accept and the read, and the admin's database is what
 * the admin configures. A user added to a group needs a reload.
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

static int group_members(struct conf_who *w, const struct group *gr,
			 const char *key, char *err, size_t errlen)
{
	size_t n = 0;

	while (gr->gr_mem[n] != NULL)
		n++;
	if (n > CONF_GROUP_MEMBERS_MAX)
		ERR("%s.%s: more than %d members", key, w->name,
		    CONF_GROUP_MEMBERS_MAX);
	w->members = calloc(n ? n : 1, sizeof(*w->members));
	if (w->members == NULL)
		ERR("%s: out of memory", key);
	for (size_t i = 0; i < n; i++) {
		const struct passwd *pw = getpwnam(gr->gr_mem[i]);

		/* A member without an account has no processes. */
		if (pw != NULL)
			w->members[w->n_members++] = (uint32_t)pw->pw_uid;
	}
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
	if (gr == NULL)
		return 0; /* a gid without an entry: primary gid only */
	w->id = (uint32_t)gr->gr_gid;
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

int conf_who_match(const struct conf_who *w, uint32_t uid, uint32_t gid)
{
	if (!w->group)
		return w->id == uid;
	if (w->id == gid)
		return 1;
	for (size_t j = 0; j < w->n_members; j++)
		if (w->members[j] == uid)
			return 1;
	return 0;
}
