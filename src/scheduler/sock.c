/*
 * The listening socket: its directory, a stale file left by a crash, its
 * owner and mode, and who is calling (SO_PEERCRED, never the payload).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "srv.h"

/* mkdir -p of the socket's directory, 0755. */
static int make_parent(const char *path)
{
	char dir[CONF_PATH_MAX];
	char *p;

	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (p == NULL || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char save = *p;

			*p = '\0';
			if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
				int e = errno;

				log_error("cannot create directory %s: %s", dir,
					  strerror(e));
				return -e;
			}
			*p = save;
			if (save == '\0')
				break;
		}
	}
	return 0;
}

/* Is a scheduler answering on path? 1 yes, 0 no (stale), -errno. */
static int socket_alive(const char *path)
{
	struct sockaddr_un sa;
	int fd, rc;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	rc = rc == 0 ? 1 : errno == ECONNREFUSED ? 0 : -errno;
	close(fd);
	return rc;
}

int sock_prepare(const char *path)
{
	struct stat st;
	int rc;

	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		log_error("socket path too long (%zu bytes, at most %zu): %s",
			  strlen(path),
			  sizeof(((struct sockaddr_un *)0)->sun_path) - 1, path);
		return -ENAMETOOLONG;
	}
	rc = make_parent(path);
	if (rc != 0)
		return rc;
	if (lstat(path, &st) != 0) {
		int e = errno;

		if (e == ENOENT)
			return 0;
		/* ENOTDIR: a part of the directory is a file; EACCES... */
		log_error("cannot use the socket path %s: %s", path,
			  strerror(e));
		return -e;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_error("%s exists and is not a socket: not touching it", path);
		return -EEXIST;
	}
	rc = socket_alive(path);
	if (rc == 1) {
		log_error("another vshare-scheduler is running on %s", path);
		return -EADDRINUSE;
	}
	if (rc < 0) {
		log_error("cannot check the socket %s: %s", path, strerror(-rc));
		return rc;
	}
	log_info("replacing the stale socket %s", path);
	if (unlink(path) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Hand the socket to socket_group. A daemon that already runs with that
 * group (the systemd unit's Group=vshare) makes no chown call at all: the
 * unit's system call filter refuses chown, and a non-root daemon may only
 * give a file to a group it is in. */
static int give_group(const struct srv *s)
{
	struct stat st;
	int e;

	if (!s->has_sock_gid)
		return 0;
	if (stat(s->path, &st) == 0 && st.st_gid == s->sock_gid)
		return 0;
	if (chown(s->path, (uid_t)-1, s->sock_gid) == 0)
		return 0;
	e = errno;
	log_error("cannot give %s to group %u (socket_group): %s; the daemon "
		  "must run as root or with that group (systemd: Group=)",
		  s->path, (unsigned)s->sock_gid, strerror(e));
	return -e;
}

int sock_listen(struct srv *s, uv_connection_cb on_connection)
{
	mode_t old;
	int rc;

	rc = uv_pipe_init(s->loop, &s->listener, 0);
	if (rc != 0)
		return rc;
	s->listener.data = s;
	/* Bind with no access for anyone but us, then open up: a peer never
	 * sees the socket with the umask's permissions. */
	old = umask(0177);
	rc = uv_pipe_bind(&s->listener, s->path);
	umask(old);
	if (rc != 0) {
		log_error("cannot bind %s: %s", s->path, uv_strerror(rc));
		return rc;
	}
	s->have_socket = 1;
	rc = give_group(s);
	if (rc != 0)
		return rc;
	if (chmod(s->path, s->conf->socket_mode) != 0) {
		rc = -errno;
		log_error("cannot chmod %s: %s", s->path, strerror(errno));
		return rc;
	}
	/* The kernel caps the backlog at net.core.somaxconn. */
	rc = uv_listen((uv_stream_t *)&s->listener, 4096, on_connection);
	if (rc != 0)
		log_error("cannot listen on %s: %s", s->path, uv_strerror(rc));
	return rc;
}

/* Is gid the admin group, or among the peer's supplementary groups? */
static int in_admin_group(int fd, gid_t gid, const struct srv *s)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (!s->has_admin_gid)
		return 0;
	if (gid == s->admin_gid)
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return 0; /* more than 256 groups, or an old kernel */
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == s->admin_gid)
			return 1;
	return 0;
}

int sock_peer(int fd, struct sched_cred *cred, const struct srv *s,
	      int *is_admin)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) {
		log_warn("SO_PEERCRED: %s", strerror(errno));
		return -errno;
	}
	cred->pid = uc.pid;
	cred->uid = uc.uid;
	cred->gid = uc.gid;
	*is_admin = uc.uid == 0 || in_admin_group(fd, uc.gid, s);
	return 0;
}
