/*
 * Preloaded into vshare-scheduler by sched.it.no_chown: every chown fails
 * with EPERM, as under the systemd unit's SystemCallFilter=~@privileged.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

int chown(const char *path, uid_t uid, gid_t gid);
int lchown(const char *path, uid_t uid, gid_t gid);
int fchown(int fd, uid_t uid, gid_t gid);
int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags);

static int deny(void)
{
	errno = EPERM;
	return -1;
}

int chown(const char *path, uid_t uid, gid_t gid)
{
	(void)path; (void)uid; (void)gid;
	return deny();
}

int lchown(const char *path, uid_t uid, gid_t gid)
{
	(void)path; (void)uid; (void)gid;
	return deny();
}

int fchown(int fd, uid_t uid, gid_t gid)
{
	(void)fd; (void)uid; (void)gid;
	return deny();
}

int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	(void)dirfd; (void)path; (void)uid; (void)gid; (void)flags;
	return deny();
}
