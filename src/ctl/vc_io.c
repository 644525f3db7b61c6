/*
 * vsharectl's side of the protocol: one blocking request, one reply.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "vc.h"

#define VC_TIMEOUT_S 10

/* A group users may be told to join: one with a name that is not root's.
 * A socket of group root (the scheduler found no group vshare to give it
 * to, or runs with socket_group "") or of a nameless group is root's
 * alone, and telling a user to join it would be wrong advice. */
static const char *joinable(gid_t gid)
{
	const struct group *gr = gid != 0 ? getgrgid(gid) : NULL;

	return gr != NULL ? gr->gr_name : NULL;
}

static void group_name(gid_t gid, char *out, size_t n)
{
	const struct group *gr = getgrgid(gid);

	if (gr != NULL)
		snprintf(out, n, "%s", gr->gr_name);
	else
		snprintf(out, n, "%u", (unsigned)gid);
}

/* What a user refused the socket should do: the one advice vsharectl and
 * vshare-run --check give. The first directory on the way that the user
 * may not enter is named; else the socket's group decides. */
static void perm_why(const char *path, char *why, size_t n)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], grp[64];
	const char *g;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = strchr(dir + 1, '/'); p != NULL; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (access(dir, X_OK) != 0 && stat(dir, &st) == 0) {
			group_name(st.st_gid, grp, sizeof(grp));
			g = joinable(st.st_gid);
			snprintf(why, n, "permission denied on %s: you may not "
				 "enter %s (mode %04o, group %s): %s%s%s", path,
				 dir, (unsigned)(st.st_mode & 07777), grp,
				 g && (st.st_mode & S_IXGRP) ? "join group " :
				 "ask the administrator to let you in",
				 g && (st.st_mode & S_IXGRP) ? g : "",
				 g && (st.st_mode & S_IXGRP) ?
				 " and log in again" : "");
			return;
		}
		*p = '/';
	}
	if (stat(path, &st) != 0) {
		snprintf(why, n, "permission denied on %s (ask the "
			 "administrator)", path);
		return;
	}
	group_name(st.st_gid, grp, sizeof(grp));
	if ((g = joinable(st.st_gid)) != NULL)
		snprintf(why, n, "permission denied on %s (join group %s and "
			 "log in again)", path, g);
	else
		snprintf(why, n, "permission denied on %s (the socket's group "
			 "is %s, which users should not join: the administrator "
			 "creates group vshare (systemd-sysusers) or sets "
			 "socket_group in the scheduler's config, and restarts "
			 "vshare-scheduler)", path, grp);
}

int vc_connect_why(const char *path, int *ec, char *why, size_t n)
{
	struct sockaddr_un sa;
	struct timeval tv = { VC_TIMEOUT_S, 0 };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, n, "socket path too long: %s", path);
		*ec = VC_EXIT_USAGE;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, n, "socket: %s", strerror(errno));
		*ec = VC_EXIT_ERROR;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	*ec = VC_EXIT_DOWN;
	if (errno == ECONNREFUSED && stat(path, &st) == 0 &&
	    !S_ISSOCK(st.st_mode)) {
		snprintf(why, n, "%s is not a socket", path);
		*ec = VC_EXIT_USAGE;
	} else if (errno == ECONNREFUSED) {
		snprintf(why, n, "vshare-scheduler is not running (connection "
			 "refused: %s is a stale socket)", path);
	} else if (errno == ENOENT || errno == ENOTDIR) {
		snprintf(why, n, "vshare-scheduler is not running (socket %s "
			 "does not exist)", path);
	} else if (errno == EACCES || errno == EPERM) {
		perm_why(path, why, n);
		*ec = VC_EXIT_ERROR;
	} else {
		snprintf(why, n, "cannot connect to %s: %s", path,
			 strerror(errno));
		*ec = VC_EXIT_ERROR;
	}
	close(fd);
	return -1;
}

int vc_connect(const char *path, int *ec)
{
	char why[512];
	int fd = vc_connect_why(path, ec, why, sizeof(why));

	if (fd < 0)
		fprintf(stderr, "vsharectl: %s\n", why);
	return fd;
}

static int write_full(int fd, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n > 0) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int io_error(int rc)
{
	if (rc == -EAGAIN || rc == -EWOULDBLOCK)
		fprintf(stderr, "vsharectl: no reply from vshare-scheduler "
			"within %d s\n", VC_TIMEOUT_S);
	else if (rc == -EPIPE || rc == -ECONNRESET)
		fprintf(stderr, "vsharectl: vshare-scheduler closed the "
			"connection\n");
	else
		fprintf(stderr, "vsharectl: %s\n", strerror(-rc));
	return VC_EXIT_ERROR;
}

/* The daemon refused the version of a request: an older daemon, which
 * does not know a newer request, or a newer one past our version. */
static int version_refused(uint16_t type, uint32_t theirs)
{
	const struct vs_msg_info *mi = vs_msg_lookup(type);

	if (mi != NULL && theirs != 0 && theirs < mi->since)
		fprintf(stderr, "vsharectl: %s needs protocol version %u, and "
			"the running vshare-scheduler speaks version %u: "
			"upgrade and restart vshare-scheduler\n", mi->name,
			mi->since, theirs);
	else
		fprintf(stderr, "vsharectl: protocol version mismatch: "
			"vshare-scheduler speaks version %u, vsharectl versions "
			"%u to %u\n", theirs, VS_PROTO_VERSION_MIN,
			VS_PROTO_VERSION);
	return VC_EXIT_ERROR;
}

/* An ERROR frame: print what the daemon says. */
static int print_error(uint16_t type, const struct vs_error *e)
{
	if (e->code == VS_E_VERSION) {
		version_refused(type, e->detail);
		fprintf(stderr, "vsharectl: vshare-scheduler: %s\n", e->msg);
		return VC_EXIT_ERROR;
	}
	if (e->code == VS_E_PERM)
		fprintf(stderr, "vsharectl: permission denied: %s\n", e->msg);
	else
		fprintf(stderr, "vsharectl: vshare-scheduler: %s (%s)\n",
			e->msg, vs_err_name(e->code));
	return VC_EXIT_ERROR;
}

/* The header's version is not ours. The reader still read a foreign
 * error (its layout is frozen), so the daemon's own words can follow. */
static int version_mismatch(uint16_t type, const struct vs_frx *rx,
			    struct vc_reply *out)
{
	const struct vs_error *e = vs_frx_foreign_error(rx);
	uint32_t theirs = e != NULL && e->code == VS_E_VERSION &&
			  e->detail != 0 ? e->detail : rx->in.hdr.version;

	if (out->keep_error) {
		out->status = VS_E_VERSION;
		out->theirs = theirs;
		if (e != NULL)
			out->text = strndup(e->msg, sizeof(e->msg));
		return VC_EXIT_ERROR;
	}
	version_refused(type, theirs);
	if (e != NULL)
		fprintf(stderr, "vsharectl: vshare-scheduler: %s\n", e->msg);
	return VC_EXIT_ERROR;
}

/*
 * Feed the common reader from the socket until it decides: a frame, or a
 * negative errno. A status document longer than the reader's own storage
 * goes to a buffer allocated once its header has passed the checks, so
 * its size is one the protocol allows (*big: the caller's to free, one
 * byte longer for the NUL that ends the text).
 */
static int read_frame(int fd, struct vs_frx *rx, unsigned char **big)
{
	unsigned char chunk[4096];
	const unsigned char *p = chunk;
	size_t n = 0;
	enum vs_frx_result r;
	ssize_t got;

	for (;;) {
		r = vs_frx_push(rx, &p, &n);
		if (r == VS_FRX_BUFFER) {
			*big = malloc((size_t)rx->in.hdr.length + 1);
			if (*big == NULL)
				return -ENOMEM;
			vs_frx_buffer(rx, *big);
			continue;
		}
		if (r != VS_FRX_MORE)
			return (int)r;
		got = read(fd, chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got == 0 ? -EPIPE : -errno;
		p = chunk;
		n = (size_t)got;
	}
}

/* A REPLY frame: its text, NUL-terminated, in memory of its own. */
static int take_reply(const struct vs_frx *rx, unsigned char *big,
		      struct vc_reply *out)
{
	const unsigned char *pl = vs_frx_payload(rx);
	const struct vs_reply *m = (const struct vs_reply *)(const void *)pl;
	unsigned char *t = big;

	out->status = m->status;
	out->len = rx->in.hdr.length - sizeof(*m);
	if (t == NULL && (t = malloc(out->len + 1)) == NULL)
		return io_error(-ENOMEM);
	memmove(t, pl + sizeof(*m), out->len);
	t[out->len] = '\0';
	out->text = (char *)t;
	return VC_EXIT_OK;
}

static int read_reply(int fd, uint16_t type, struct vc_reply *out)
{
	struct vs_frx rx;
	unsigned char *big = NULL;
	int r;

	vs_frx_init(&rx, VS_ROLE_SCHEDULER, VS_MAX_PAYLOAD);
	r = read_frame(fd, &rx, &big);
	if (r == VS_FRX_FRAME && rx.in.hdr.type == VS_MSG_REPLY)
		return take_reply(&rx, big, out);
	free(big);
	if (r < 0)
		return io_error(r);
	if (r == VS_FRX_VERSION)
		return version_mismatch(type, &rx, out);
	if (r == VS_FRX_FRAME && rx.in.hdr.type == VS_MSG_ERROR &&
	    out->keep_error) {
		const struct vs_error *e = vs_frx_payload(&rx);

		out->status = e->code;
		out->theirs = e->code == VS_E_VERSION ? e->detail : 0;
		out->text = strndup(e->msg, sizeof(e->msg));
		return VC_EXIT_ERROR;
	}
	if (r == VS_FRX_FRAME && rx.in.hdr.type == VS_MSG_ERROR)
		return print_error(type, vs_frx_payload(&rx));
	fprintf(stderr, "vsharectl: malformed reply from vshare-scheduler: "
		"%s\n", r == VS_FRX_PROTO ? rx.why : "not a reply");
	return VC_EXIT_ERROR;
}

int vc_call(int fd, uint16_t type, const void *payload, uint32_t len,
	    struct vc_reply *out)
{
	unsigned char buf[sizeof(struct vs_hdr) + VS_FRX_MAX_REQ];
	const struct vs_msg_info *mi = vs_msg_lookup(type);
	struct vs_hdr h;
	int rc;

	if (len > sizeof(buf) - sizeof(struct vs_hdr) || mi == NULL)
		return VC_EXIT_ERROR;
	vs_hdr_init_v(&h, (uint16_t)mi->since, type, len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(struct vs_hdr), payload, len);
	rc = write_full(fd, buf, sizeof(struct vs_hdr) + len);
	/* A daemon that refuses the connection (max_clients) says why and
	 * closes before reading: its error is still there to read. */
	if (rc != 0 && rc != -EPIPE && rc != -ECONNRESET)
		return io_error(rc);
	return read_reply(fd, type, out);
}
