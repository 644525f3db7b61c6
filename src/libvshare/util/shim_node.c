/*
 * The node's client configuration: one small key = value file, parsed
 * without allocating (the shim lives in other people's processes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
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
	if (!strcmp(k, "mem_limit"))
		return vs_parse_size(v, VS_SIZE_LOWER_B, &n->mem_limit);
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
	char *eq, *k, *v;

	line = trim(line);
	if (line[0] == '\0' || line[0] == '#')
		return;
	eq = strchr(line, '=');
	if (eq != NULL) {
		*eq = '\0';
		k = trim(line);
		v = trim(eq + 1);
		if (set_key(n, k, v) == 0)
			return;
	}
	log_warn("%s, line %d: not \"socket\", \"require_scheduler\" or "
		 "\"mem_limit\" = a valid value; line ignored", path, no);
}

/* Whether the admin, and only the admin, controls the file. */
static int trusted(const struct stat *st, uid_t owner)
{
	return S_ISREG(st->st_mode) && st->st_uid == owner &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
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

int shim_node_load(const char *path, uid_t owner, struct shim_node *out)
{
	char text[NODE_FILE_MAX + 1];
	struct stat st;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	memset(out, 0, sizeof(*out));
	out->require = -1;
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 1 : -1;
	if (node_stat(fd, &st) != 0 || !trusted(&st, owner)) {
		close(fd);
		log_warn("%s is ignored: only a regular file that root owns "
			 "and no one else may write is trusted", path);
		return -1;
	}
	r = read(fd, text, NODE_FILE_MAX);
	close(fd);
	if (r < 0) {
		log_warn("%s: %s; ignored", path, strerror(errno));
		return -1;
	}
	text[r] = '\0';
	parse_text(out, path, text);
	out->loaded = 1;
	return 0;
}

void shim_node_read(void)
{
	(void)shim_node_load(VSHARE_CLIENT_CONF, 0, &shim_node);
}
