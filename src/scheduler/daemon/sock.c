/*
 * The listening socket: its directory (checked, held by a descriptor), a
 * stale file left by a crash, or the socket systemd made (socket
 * activation), its owner and mode (set through that descriptor, never
 * through a link), how many connections one turn of the loop accepts,
 * and who is calling (SO_PEERCRED, never the payload).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "srv.h"

/* ---- the socket's directory ---- */

/*
 * A directory on the socket's way must be one that only root or the
 * daemon can change: whoever else owns or may write it could swap the
 * socket, between its bind and its chown and chmod, for a link to any
 * file, which the daemon would then hand over (a root daemon: any file
 * of the system), or swap the directory itself. A sticky directory such
 * as /tmp is safe: there nobody renames or removes another's entry.
 * 0, or -EPERM (logged).
 */
static int dir_safe(const char *dir, const struct stat *st)
{
	unsigned me = (unsigned)geteuid();

	if (!S_ISDIR(st->st_mode)) {
		log_error("socket directory %s: not a directory", dir);
		return -ENOTDIR;
	}
	if (st->st_uid != 0 && st->st_uid != me) {
		log_error("socket directory %s belongs to uid %u, neither "
			  "root nor the daemon's user (uid %u): refusing it, "
			  "since its owner could swap the socket for a link to "
			  "another file", dir, (unsigned)st->st_uid, me);
		return -EPERM;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		log_error("socket directory %s may be written by %s (mode "
			  "%04o) and has no sticky bit: refusing it, since "
			  "they could swap the socket for a link to another "
			  "file", dir, st->st_mode & S_IWOTH ? "everyone" :
			  "its group",
			  (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* One step down from the directory fd, to its entry name (made first,
 * mode 0755, when `make`): opened without following a link, and checked.
 * *way is the path so far, which grows by the name. The new descriptor
 * (fd is closed), or -errno (logged). */
static int step(int fd, const char *name, int make, char *way, size_t n)
{
	struct stat st;
	size_t len = strlen(way);
	int next, rc;

	snprintf(way + len, n - len, "%s%s", len > 1 ? "/" : "", name);
	if (make && mkdirat(fd, name, 0755) != 0 && errno != EEXIST) {
		rc = -errno;
		log_error("cannot create directory %s: %s", way, strerror(-rc));
		close(fd);
		return rc;
	}
	next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = next < 0 ? -errno : 0;
	close(fd);
	if (rc != 0) {
		/* ENOTDIR or ELOOP: a link appeared where the real path had
		 * none. */
		log_error("cannot open directory %s: %s", way, strerror(-rc));
		return rc;
	}
	if (fstat(next, &st) != 0 || (rc = dir_safe(way, &st)) != 0) {
		close(next);
		return rc != 0 ? rc : -EIO;
	}
	return next;
}

/* Every name of path, one after the other, down from fd (made where
 * `make`); the last descriptor, or -errno (logged). */
static int walk(int fd, char *path, int make, char *way, size_t n)
{
	char *save = NULL;

	for (char *c = strtok_r(path, "/", &save); c != NULL && fd >= 0;
	     c = strtok_r(NULL, "/", &save)) {
		if (make && (strcmp(c, ".") == 0 || strcmp(c, "..") == 0)) {
			log_error("socket directory %s: \"%s\" in a part that "
				  "does not exist yet", way, c);
			close(fd);
			return -EINVAL;
		}
		fd = step(fd, c, make, way, n);
	}
	return fd;
}

/* tail becomes part + tail; both come from a socket path (under 108
 * bytes), far below tail's PATH_MAX. */
static void prepend(char *tail, const char *part)
{
	size_t len = strlen(part);

	memmove(tail + len, tail, strlen(tail) + 1);
	memcpy(tail, part, len);
}

/*
 * The socket's directory, made where missing (mode 0755), opened with
 * every directory on its way checked (dir_safe): the way is the real one
 * (a link on the configured path is resolved once, by realpath, for the
 * part that exists), walked from / one name at a time without following
 * links, so that what is checked is what is used. real gets the path
 * walked. The directory's descriptor (O_PATH), or -errno (logged).
 */
static int open_dir(const char *dir, char *real, size_t n)
{
	char have[PATH_MAX], rp[PATH_MAX], tail[PATH_MAX] = "";
	struct stat st;
	int fd;

	snprintf(have, sizeof(have), "%s", dir);
	/* The longest part that exists; the rest (tail) is to be made. */
	while (realpath(have, rp) == NULL) {
		int e = errno;
		char *cut = strrchr(have, '/');

		if (e != ENOENT) {
			log_error("cannot use the socket directory %s: %s", dir,
				  strerror(e));
			return -e;
		}
		if (cut == NULL) {           /* relative: below the cwd */
			prepend(tail, have);
			prepend(tail, "/");
			snprintf(have, sizeof(have), ".");
		} else {
			prepend(tail, cut);
			if (cut == have)
				cut[1] = '\0';  /* "/name": / exists */
			else
				cut[0] = '\0';
		}
	}
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || dir_safe("/", &st) != 0) {
		close(fd);
		return -EPERM;
	}
	snprintf(real, n, "/");
	fd = walk(fd, rp, 0, real, n);
	return walk(fd, tail, 1, real, n);
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

/* The socket's directory and name in s, from s->path; 0 or -errno. */
static int locate(struct srv *s)
{
	char dir[CONF_PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(s->path, '/');
	int fd;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == s->path ? 1 :
			 (int)(slash - s->path), s->path);
	s->sock_name = slash == NULL ? s->path : slash + 1;
	fd = open_dir(dir, real, sizeof(real));
	if (fd < 0)
		return fd;
	if (snprintf(s->bind_path, sizeof(s->bind_path), "%s%s%s", real,
		     strcmp(real, "/") == 0 ? "" : "/", s->sock_name) >=
	    (int)sizeof(s->bind_path)) {
		log_error("socket path too long once its links are resolved: "
			  "%s/%s", real, s->sock_name);
		close(fd);
		return -ENAMETOOLONG;
	}
	s->sock_dir = fd;
	s->has_sock_dir = 1;
	return 0;
}

/* ---- the socket systemd passed (vshare-scheduler.socket) ---- */

static int refuse_passed(int n, int rc)
{
	for (int i = 0; i < n; i++)
		close(SD_LISTEN_FDS_START + i);
	return rc;
}

/*
 * Take the socket systemd passed, if any: 1 (s->passed_fd set), 0 when
 * none was passed (the daemon binds its own), or -errno (logged). The
 * daemon serves only its configured socket: one listening Unix stream
 * socket bound to the configured path (or its real path, links
 * resolved), present in the directory locate() checked.
 */
static int take_passed(struct srv *s)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	struct stat st;
	int n = sd_listen_fds(1), fd = SD_LISTEN_FDS_START;

	if (n <= 0) {
		if (n < 0)
			log_error("socket activation: %s", strerror(-n));
		return n;
	}
	if (n != 1) {
		log_error("systemd passed %d sockets: vshare-scheduler.socket "
			  "must pass one, %s", n, s->path);
		return refuse_passed(n, -EINVAL);
	}
	memset(&sa, 0, sizeof(sa));
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
	    len <= offsetof(struct sockaddr_un, sun_path) ||
	    sa.sun_path[0] == '\0') {
		log_error("the socket systemd passed is not a listening Unix "
			  "stream socket on a path: vshare-scheduler.socket "
			  "must have ListenStream=%s", s->path);
		return refuse_passed(n, -EINVAL);
	}
	if (strcmp(sa.sun_path, s->path) != 0 &&
	    strcmp(sa.sun_path, s->bind_path) != 0) {
		log_error("the socket systemd passed is %s, not the configured "
			  "%s: change ListenStream= of vshare-scheduler.socket "
			  "and \"socket\" of the config together", sa.sun_path,
			  s->path);
		return refuse_passed(n, -EINVAL);
	}
	if (fstatat(s->sock_dir, s->sock_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISSOCK(st.st_mode)) {
		log_error("%s, the socket systemd passed, is no longer a socket "
			  "in its directory", s->path);
		return refuse_passed(n, -EEXIST);
	}
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	s->passed_fd = fd;
	s->has_passed_fd = 1;
	log_info("took the socket from systemd: %s", s->path);
	return 1;
}

int sock_prepare(struct srv *s)
{
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
	struct stat st;
	int rc;

	if (strlen(s->path) > max) {
		log_error("socket path too long (%zu bytes, at most %zu): %s",
			  strlen(s->path), max, s->path);
		return -ENAMETOOLONG;
	}
	rc = locate(s);
	if (rc != 0)
		return rc;
	rc = take_passed(s);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (fstatat(s->sock_dir, s->sock_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		int e = errno;

		if (e == ENOENT)
			return 0;
		log_error("cannot use the socket path %s: %s", s->path,
			  strerror(e));
		return -e;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_error("%s exists and is not a socket: not touching it",
			  s->path);
		return -EEXIST;
	}
	rc = socket_alive(s->bind_path);
	if (rc == 1) {
		log_error("another vshare-scheduler is running on %s", s->path);
		return -EADDRINUSE;
	}
	if (rc < 0) {
		log_error("cannot check the socket %s: %s", s->path,
			  strerror(-rc));
		return rc;
	}
	log_info("replacing the stale socket %s", s->path);
	if (unlinkat(s->sock_dir, s->sock_name, 0) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* ---- the socket's owner and mode, by its directory's descriptor ---- */

/* Hand the socket to socket_group. A daemon that already runs with that
 * group (the systemd unit's Group=vshare) makes no chown call at all: the
 * unit's system call filter refuses chown, and a non-root daemon may only
 * give a file to a group it is in. */
static int give_group(const struct srv *s, const struct stat *st)
{
	int e;

	if (!s->has_sock_gid || st->st_gid == s->sock_gid)
		return 0;
	if (fchownat(s->sock_dir, s->sock_name, (uid_t)-1, s->sock_gid,
		     AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	e = errno;
	log_error("cannot give %s to group %u (socket_group): %s; the daemon "
		  "must run as root or with that group (systemd: Group=)",
		  s->path, (unsigned)s->sock_gid, strerror(e));
	return -e;
}

/* chmod without following a link. A C library that cannot do that
 * (EOPNOTSUPP, also its answer for a link) may chmod by name once the
 * name is seen to be a socket again: in a directory that only root and
 * the daemon may change (dir_safe), nobody else can swap it meanwhile. */
static int set_mode(const struct srv *s, mode_t mode)
{
	struct stat st;

	if (fchmodat(s->sock_dir, s->sock_name, mode, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOTSUP)
		return -errno;
	if (fstatat(s->sock_dir, s->sock_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	return fchmodat(s->sock_dir, s->sock_name, mode, 0) == 0 ? 0 : -errno;
}

/* What was bound must be the daemon's socket still, then gets its group
 * and mode: never through a link, never a file swapped in for it. A
 * socket systemd made stays systemd's: not removed at exit, and, when
 * another user owns it, left with the unit's SocketMode= and
 * SocketGroup=. */
static int own_socket(struct srv *s)
{
	struct stat st;
	int rc;

	if (fstatat(s->sock_dir, s->sock_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISSOCK(st.st_mode) ||
	    (st.st_uid != geteuid() && !s->has_passed_fd)) {
		log_error("%s is not the socket just bound (replaced?): not "
			  "touching it", s->path);
		return -EEXIST;
	}
	if (s->has_passed_fd && st.st_uid != geteuid()) {
		log_info("%s belongs to uid %u: its mode and group are those "
			 "of vshare-scheduler.socket", s->path,
			 (unsigned)st.st_uid);
		return 0;
	}
	s->have_socket = !s->has_passed_fd;
	rc = give_group(s, &st);
	if (rc != 0)
		return rc;
	rc = set_mode(s, s->conf->socket_mode);
	if (rc != 0)
		log_error("cannot chmod %s: %s", s->path, strerror(-rc));
	return rc;
}

/* ---- listening and accepting ---- */

/*
 * Connections taken in one turn of the loop, at most. libuv accepts until
 * the listen queue is empty, which a flood of connections keeps from ever
 * happening: the loop would serve nobody else, and grants would wait for
 * the flood to end. Past the bound the listener's callback leaves the
 * connection with libuv, which then stops polling the listener until
 * uv_accept takes it; a check handle, which runs once the turn's I/O
 * callbacks are done, starts the next batch with it.
 */
#define SOCK_ACCEPTS_PER_TURN 32u
#define SOCK_BACKLOG 512

static void on_turn_end(uv_check_t *h);

/* Hand the connection waiting in the listener to the layer above; one
 * it could not take (out of memory) waits for the next turn. */
static void accept_one(struct srv *s)
{
	s->acc_turn++;
	if (s->accept_one(s) != 0)
		s->acc_held = 1;
	if (!uv_is_active((uv_handle_t *)&s->acc_check))
		uv_check_start(&s->acc_check, on_turn_end);
}

static void on_turn_end(uv_check_t *h)
{
	struct srv *s = h->data;

	s->acc_turn = 0;
	if (!s->acc_held) {
		uv_check_stop(h);
		return;
	}
	s->acc_held = 0;
	accept_one(s);
}

static void on_listener(uv_stream_t *server, int status)
{
	struct srv *s = server->data;

	if (status < 0) {
		log_warn("accept: %s", uv_strerror(status));
		return;
	}
	if (s->acc_turn >= SOCK_ACCEPTS_PER_TURN) {
		s->acc_held = 1; /* libuv keeps it: on_turn_end takes it */
		return;
	}
	accept_one(s);
}

int sock_listen(struct srv *s, int (*accept_one_cb)(struct srv *s))
{
	mode_t old;
	int rc;

	s->accept_one = accept_one_cb;
	uv_check_init(s->loop, &s->acc_check);
	s->acc_check.data = s;
	rc = uv_pipe_init(s->loop, &s->listener, 0);
	if (rc != 0)
		return rc;
	s->listener.data = s;
	/* Bind with no access for anyone but us, then open up: a peer never
	 * sees the socket with the umask's permissions. Bound by its real
	 * path, in the directory that sock_prepare checked and holds. */
	if (s->has_passed_fd) {
		rc = uv_pipe_open(&s->listener, s->passed_fd);
		if (rc != 0) {
			log_error("cannot use the socket systemd passed: %s",
				  uv_strerror(rc));
			return rc;
		}
	} else {
		old = umask(0177);
		rc = uv_pipe_bind(&s->listener, s->bind_path);
		umask(old);
		if (rc != 0) {
			log_error("cannot bind %s: %s", s->path,
				  uv_strerror(rc));
			return rc;
		}
	}
	rc = own_socket(s);
	if (rc != 0)
		return rc;
	/* The kernel caps the backlog at net.core.somaxconn. */
	rc = uv_listen((uv_stream_t *)&s->listener, SOCK_BACKLOG, on_listener);
	if (rc != 0)
		log_error("cannot listen on %s: %s", s->path, uv_strerror(rc));
	return rc;
}

void sock_close(struct srv *s)
{
	if (s->have_socket) {
		(void)unlinkat(s->sock_dir, s->sock_name, 0);
		s->have_socket = 0;
	}
	if (s->listener.loop != NULL)
		uv_close((uv_handle_t *)&s->listener, NULL);
	if (s->acc_check.loop != NULL)
		uv_close((uv_handle_t *)&s->acc_check, NULL);
	if (s->has_sock_dir) {
		close(s->sock_dir);
		s->has_sock_dir = 0;
	}
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
