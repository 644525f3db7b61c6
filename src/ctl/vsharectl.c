/*
 * vsharectl: show and change the state of vshare-scheduler.
 *
 *   vsharectl [-s PATH] [--json] [--wide] COMMAND [ARGUMENT] [--gpu UUID|INDEX]
 *
 * The commands are the table of vc_cmd.c. Exit codes: 0 ok, 1 the daemon
 * refused or failed, 2 bad usage, 3 the daemon is not running.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vc.h"

int main(int argc, char **argv)
{
	struct vc_args a;
	struct vs_admin_set set;
	struct vs_status_req sreq;
	struct vc_reply r = { 0, NULL, 0, 0, 0 };
	const char *path;
	int rc, fd, ec = 0;

	rc = vc_parse_args(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? VC_EXIT_OK : rc;
	rc = vc_build(&a, &set);
	if (rc != 0)
		return rc;
	path = a.socket ? a.socket : getenv("VSHARE_SOCKET");
	if (path == NULL || *path == '\0')
		path = VS_DEFAULT_SOCKET;
	fd = vc_connect(path, &ec);
	if (fd < 0)
		return ec;
	memset(&sreq, 0, sizeof(sreq));
	if (a.cmd->type == VS_MSG_STATUS || a.cmd->type == VS_MSG_METRICS)
		rc = vc_call(fd, a.cmd->type, &sreq, sizeof(sreq), &r);
	else
		rc = vc_call(fd, a.cmd->type, &set, sizeof(set), &r);
	close(fd);
	if (rc == VC_EXIT_OK)
		rc = a.cmd->show(&a, &r);
	free(r.text);
	return rc;
}
