/*
 * The node's client configuration: one small key = value file, parsed
 * without allocating (the shim lives in other people's processes).
 */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "vshare/proto.h"
#include "shim_node.h"
#include "size.h"

#define NODE_FILE_MAX 8192

struct shim_node shim_node = { .require = -1 };

/* fstat through the system call, as client_fd.c does: glibc's fstat
 * symbol is newer than the containers the shim loads into. */
static int node_stat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

static int parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
	    !strcasecmp(v, "on"))
		*out = 1;
	else if (!strcmp(v, "0") || !strcasecmp(v, "no") ||
		 !strcasecmp(v, "false") || !strcasecmp(v, "off"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* A value that does not parse binds as the strictest one: a typo must
 * not lift the admin's limit. */
static void set_strict(struct shim_node *n, const char *k)
{
	if (!strcmp(k, "require_scheduler"))
		n->require = 1;
	else if (!strcmp(k, "mem_limit"))
		n->mem_limit = SHIM_NODE_MEM_REFUSE;
}

/* One setting; -1 if the key is unknown or the value bad. */
static int set_key(struct shim_node *n, const char *k, const char *v)
{
	if (!strcmp(k, "socket")) {
		if (v[0] != '/' || strlen(v) >= sizeof(n->socket))
			return -1;
		snprintf(n->socket, sizeof(n->socket), "%s", v);
		return 0;
	}
	if (!strcmp(k, "require_scheduler"))
		return parse_bool(v, &n->require);
	/* The grammar of VSHARE_MEM_LIMIT: -2 for a number with no unit
	 * below 1 MiB ("8" for "8G"). */
	if (!strcmp(k, "mem_limit"))
		return vs_parse_size(v, VS_SIZE_LOWER_B | VS_SIZE_NEED_UNIT,
				     &n->mem_limit);
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static void parse_line(struct shim_node *n, const char *path, int no,
		       char *line)
{
	char *eq, *k = NULL, *v;
	int rc;

	line = trim(line);
	if (line[0] == '\0' || line[0] == '#')
		return;
	eq = strchr(line, '=');
	if (eq != NULL) {
		*eq = '\0';
		k = trim(line);
		v = trim(eq + 1);
		rc = set_key(n, k, v);
		if (rc == 0)
			return;
		set_strict(n, k);
		if (!strcmp(k, "mem_limit")) {
			char why[VS_SIZE_ERR_LEN];

			log_error("%s, line %d: mem_limit %s; until then every "
				  "allocation is refused", path, no,
				  vs_size_error(why, sizeof(why), v, rc));
			return;
		}
	}
	log_error("%s, line %d: not \"socket\", \"require_scheduler\" or "
		  "\"mem_limit\" = a valid value; a bad require_scheduler "
		  "binds as yes, a bad mem_limit refuses every allocation",
		  path, no);
}

static void parse_text(struct shim_node *n, const char *path, char *text)
{
	char *line = text, *nl;
	int no = 1;

	for (; line != NULL; line = nl, no++) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl++ = '\0';
		parse_line(n, path, no, line);
	}
}

/* Whether this process runs in a user namespace other than the initial
 * one, where the initial one's root is unmapped (its files show as the
 * overflow uid). The initial namespace maps every id to itself. */
static int in_child_userns(void)
{
	char buf[128];
	unsigned long a, b, c;
	int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return 0;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r < 0)
		return 0;
	buf[r] = '\0';
	return !(sscanf(buf, "%lu %lu %lu", &a, &b, &c) == 3 && a == 0 &&
		 b == 0 && c == 4294967295ul && strchr(buf, '\n') ==
		 buf + strlen(buf) - 1);
}

static uid_t overflow_uid(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (r <= 0)
		return 65534;
	buf[r] = '\0';
	return (uid_t)strtoul(buf, NULL, 10);
}

/* Who controls st: 1 the admin (owner, no one else may write), 0 someone
 * else, 2 unknown: owned by the overflow uid in a user namespace, which
 * is how the initial namespace's root shows there. */
static int owner_ok(const struct stat *st, uid_t owner)
{
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return 0;
	if (st->st_uid == owner)
		return 1;
	return st->st_uid == overflow_uid() && in_child_userns() ? 2 : 0;
}

/* The folder holding path: whoever may write it may replace the file. */
static int dir_ok(const char *path, uid_t owner)
{
	char dir[SHIM_NODE_PATH_MAX * 2];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd, ok;

	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
		 (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = node_stat(fd, &st) == 0 ? owner_ok(&st, owner) : 0;
	close(fd);
	return ok;
}

/* The whole file into text, or -1 if it is longer than NODE_FILE_MAX
 * (or a read fails): a cut file could lose the line that binds. */
static ssize_t read_all(int fd, char *text)
{
	size_t n = 0;
	ssize_t r;

	while (n <= NODE_FILE_MAX) {
		r = read(fd, text + n, NODE_FILE_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > NODE_FILE_MAX) {
		errno = EFBIG;
		return -1;
	}
	text[n] = '\0';
	return (ssize_t)n;
}

/* A file is there but cannot be trusted or read: the strictest settings
 * (the default socket, the scheduler required, nothing allocated), for
 * the admin to fix, rather than none, which a user could arrange. */
static int strict(struct shim_node *out, const char *path, const char *why)
{
	log_error("%s: %s; until it is fixed the scheduler is required at "
		  "%s and every allocation is refused", path, why,
		  VS_DEFAULT_SOCKET);
	out->loaded = 1;
	out->strict = 1;
	out->require = 1;
	out->mem_limit = SHIM_NODE_MEM_REFUSE;
	return -1;
}

int shim_node_load(const char *path, uid_t owner, struct shim_node *out)
{
	char text[NODE_FILE_MAX + 2];
	struct stat st;
	ssize_t len = -1;
	int fd, own, dir;

	memset(out, 0, sizeof(*out));
	out->require = -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
		  O_NOFOLLOW);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return 1;
	if (fd < 0)
		return strict(out, path, errno == ELOOP ? "a symbolic link" :
			      strerror(errno));
	own = node_stat(fd, &st) == 0 && S_ISREG(st.st_mode) ?
	      owner_ok(&st, owner) : 0;
	dir = own ? dir_ok(path, owner) : 0;
	if (!own || !dir || (len = read_all(fd, text)) < 0) {
		int e = errno;

		close(fd);
		return strict(out, path, !own ? "not a regular file that root "
			      "owns and no one else may write" : !dir ?
			      "its folder is not root's alone" : e == EFBIG ?
			      "longer than 8 KiB" : strerror(e));
	}
	close(fd);
	/* The lines are read as C strings: whatever follows a NUL byte
	 * would be lost, a mem_limit line with it. */
	if (memchr(text, '\0', (size_t)len) != NULL)
		return strict(out, path, "it holds a NUL byte, and the text "
			      "after it cannot be read");
	/* In a user namespace root's file shows as the overflow uid, and a
	 * file the user made shows as their mapped uid: the owner says
	 * nothing. Apply it (a user cannot make an overflow-owned file),
	 * and say that the node is open to the namespace's tricks. */
	if (own == 2 || dir == 2)
		log_error("%s: in a user namespace the node's settings cannot "
			  "be trusted (its owner is hidden); applying them, "
			  "but the admin should disable unprivileged user "
			  "namespaces", path);
	parse_text(out, path, text);
	out->loaded = 1;
	return 0;
}

void shim_node_read(void)
{
	(void)shim_node_load(VSHARE_CLIENT_CONF, 0, &shim_node);
}
