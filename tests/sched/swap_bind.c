/*
 * Preloaded into vshare-scheduler by sched.hostile.socket_symlink: right
 * after the daemon binds a Unix socket, the link named by
 * $VSHARE_SWAP_LINK is renamed over the socket's path, as another user
 * who may write the socket's directory could do at that moment. The
 * daemon must then leave the link and what it points to alone.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int (*real)(int, const struct sockaddr *, socklen_t) =
		(int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT,
									"bind");
	const char *link = getenv("VSHARE_SWAP_LINK");
	int rc;

	if (real == NULL)
		return -1;
	rc = real(fd, sa, len);
	if (rc == 0 && link != NULL && sa->sa_family == AF_UNIX)
		(void)rename(link, ((const struct sockaddr_un *)sa)->sun_path);
	return rc;
}
