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

#include "vc.h"

#define VC_TIMEOUT_S 10

int vc_connect(const char *path, int *ec)
{
	struct sockaddr_un sa;
	struct timeval tv = { VC_TIMEOUT_S, 0 };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "vsharectl: socket path too long: %s\n", path);
		*ec = VC_EXIT_USAGE;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "vsharectl: socket: %s\n", strerror(errno));
		*ec = VC_EXIT_ERROR;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (errno == ECONNREFUSED && stat(path, &st) == 0 &&
	    !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "vsharectl: %s is not a socket\n", path);
		*ec = VC_EXIT_USAGE;
	} else if (errno == ENOENT || errno == ECONNREFUSED ||
		   errno == ENOTDIR) {
		fprintf(stderr, "vsharectl: vshare-scheduler is not running "
			"(socket %s)\n", path);
		*ec = VC_EXIT_DOWN;
	} else if (errno == EACCES || errno == EPERM) {
		const struct group *gr = stat(path, &st) == 0 ?
					 getgrgid(st.st_gid) : NULL;

		fprintf(stderr, "vsharectl: permission denied: cannot connect "
			"to %s (members of group %s may: ask to be added)\n",
			path, gr ? gr->gr_name : "of the socket");
		*ec = VC_EXIT_ERROR;
	} else {
		fprintf(stderr, "vsharectl: cannot connect to %s: %s\n", path,
			strerror(errno));
		*ec = VC_EXIT_ERROR;
	}
	close(fd);
	return -1;
}

static int read_full(int fd, void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r == 0 ? -EPIPE : -errno;
		p += r;
		n -= (size_t)r;
	}
	return 0;
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

/* An ERROR frame: print what the daemon says. */
static int print_error(const struct vs_error *e)
{
	if (e->code == VS_E_PERM)
		fprintf(stderr, "vsharectl: permission denied: %s\n", e->msg);
	else
		fprintf(stderr, "vsharectl: vshare-scheduler: %s (%s)\n",
			e->msg, vs_err_name(e->code));
	return VC_EXIT_ERROR;
}

/* The header's version is not ours; its layout is frozen, the rest is
 * read only if it has the size of an error. */
static int version_mismatch(int fd, const struct vs_hdr *h)
{
	struct vs_error e;

	fprintf(stderr, "vsharectl: protocol version mismatch: "
		"vshare-scheduler speaks version %u, vsharectl version %u\n",
		h->version, VS_PROTO_VERSION);
	if (h->type == VS_MSG_ERROR && h->length == sizeof(e) &&
	    read_full(fd, &e, sizeof(e)) == 0) {
		e.msg[sizeof(e.msg) - 1] = '\0';
		fprintf(stderr, "vsharectl: vshare-scheduler: %s\n", e.msg);
	}
	return VC_EXIT_ERROR;
}

static int read_reply(int fd, struct vc_reply *out)
{
	struct vs_hdr h;
	unsigned char *p;
	int rc;

	rc = read_full(fd, &h, sizeof(h));
	if (rc != 0)
		return io_error(rc);
	rc = vs_check_hdr(&h, VS_ROLE_SCHEDULER);
	if (rc == VS_E_VERSION)
		return version_mismatch(fd, &h);
	if (rc != VS_OK || (h.type != VS_MSG_REPLY && h.type != VS_MSG_ERROR)) {
		fprintf(stderr, "vsharectl: malformed reply from "
			"vshare-scheduler\n");
		return VC_EXIT_ERROR;
	}
	p = malloc(h.length + 1);
	if (p == NULL)
		return io_error(-ENOMEM);
	rc = read_full(fd, p, h.length);
	if (rc == 0 && vs_check_payload(&h, p, NULL) != VS_OK)
		rc = -EPROTO;
	if (rc != 0) {
		free(p);
		return io_error(rc);
	}
	if (h.type == VS_MSG_ERROR) {
		rc = print_error((const struct vs_error *)(void *)p);
		free(p);
		return rc;
	}
	out->status = ((struct vs_reply *)(void *)p)->status;
	out->len = h.length - sizeof(struct vs_reply);
	memmove(p, p + sizeof(struct vs_reply), out->len);
	p[out->len] = '\0';
	out->text = (char *)p;
	return VC_EXIT_OK;
}

int vc_call(int fd, uint16_t type, const void *payload, uint32_t len,
	    struct vc_reply *out)
{
	unsigned char buf[sizeof(struct vs_hdr) + 64];
	struct vs_hdr h;
	int rc;

	if (len > sizeof(buf) - sizeof(struct vs_hdr))
		return VC_EXIT_ERROR;
	vs_hdr_init(&h, type, len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(struct vs_hdr), payload, len);
	rc = write_full(fd, buf, sizeof(struct vs_hdr) + len);
	/* A daemon that refuses the connection (max_clients) says why and
	 * closes before reading: its error is still there to read. */
	if (rc != 0 && rc != -EPIPE && rc != -ECONNRESET)
		return io_error(rc);
	return read_reply(fd, out);
}
