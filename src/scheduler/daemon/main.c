/*
 * vshare-scheduler: command line, configuration, then the loop.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"
#include "srv.h"

#ifndef VSHARE_VERSION
#define VSHARE_VERSION "0"
#endif

struct opts {
	const char *socket;
	const char *config;
	int config_given;
	int print_config;
	int log_level;          /* -1: from the config */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: vshare-scheduler [options]\n"
"  -s, --socket PATH     listen on PATH (default: $VSHARE_SOCKET, the config's\n"
"                        \"socket\", or " VS_DEFAULT_SOCKET ")\n"
"  -c, --config FILE     configuration (default " CONF_DEFAULT_PATH ";\n"
"                        a missing default file is fine)\n"
"      --print-config    print the effective configuration as JSON and exit\n"
"  -l, --log-level LVL   error, warn, info or debug (overrides the config)\n"
"  -f, --foreground      run in the foreground (the default; for systemd)\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n");
}

/* 0: go on, 1: exit 0, -1: exit 2. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(o, 0, sizeof(*o));
	o->config = CONF_DEFAULT_PATH;
	o->log_level = -1;
	while ((ch = getopt_long(argc, argv, "s:c:l:fhV", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->socket = optarg; break;
		case 'c': o->config = optarg; o->config_given = 1; break;
		case 'P': o->print_config = 1; break;
		case 'f': break;
		case 'l':
			o->log_level = log_level_parse(optarg);
			if (o->log_level < 0) {
				fprintf(stderr, "vshare-scheduler: --log-level: "
					"\"%s\" is not error, warn, info or debug\n",
					optarg);
				return -1;
			}
			break;
		case 'h': usage(stdout); return 1;
		case 'V':
			printf("vshare-scheduler %s (protocol %u)\n",
			       VSHARE_VERSION, VS_PROTO_VERSION);
			return 1;
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vshare-scheduler: unexpected argument \"%s\"\n",
			argv[optind]);
		return -1;
	}
	return 0;
}

/* Each connection is a file descriptor: allow as many as we may. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("cannot raise the open file limit");
	}
}

/* Socket path: --socket, $VSHARE_SOCKET, the config file, the default. */
static const char *socket_path(const struct opts *o, const struct conf *c)
{
	const char *env = getenv("VSHARE_SOCKET");

	if (o->socket)
		return o->socket;
	if (env && *env)
		return env;
	if (c->socket[0])
		return c->socket;
	return VS_DEFAULT_SOCKET;
}

static int setup(struct srv *s, struct conf *c, const struct opts *o)
{
	char err[512];
	const char *path;
	int rc;

	rc = conf_load(c, o->config, o->config_given, err, sizeof(err));
	if (rc < 0) {
		log_error("config: %s", err);
		return -1;
	}
	if (rc == 1)
		log_debug("config: %s does not exist, using defaults", o->config);
	if (o->log_level >= 0)
		c->log_level = o->log_level;
	log_set_level((enum log_level)c->log_level);
	path = socket_path(o, c);
	if (strlen(path) >= sizeof(s->path) || path[0] == '\0') {
		log_error("socket path empty or too long: %s", path);
		return -1;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	rc = conf_group(c->socket_group, CONF_DEF_SOCKET_GROUP, &s->sock_gid,
			"socket_group", err, sizeof(err));
	if (rc < 0) {
		log_error("config: %s", err);
		return -1;
	}
	s->has_sock_gid = rc == 0;
	rc = conf_group(c->admin_group, CONF_DEF_ADMIN_GROUP, &s->admin_gid,
			"admin_group", err, sizeof(err));
	if (rc < 0) {
		log_error("config: %s", err);
		return -1;
	}
	s->has_admin_gid = rc == 0;
	snprintf(s->admin_group_name, sizeof(s->admin_group_name), "%s",
		 strcmp(c->admin_group, CONF_GROUP_AUTO) == 0 ?
		 CONF_DEF_ADMIN_GROUP : c->admin_group);
	return 0;
}

int main(int argc, char **argv)
{
	static struct srv s; /* zeroed: handles not yet initialised */
	struct conf c;
	struct opts o;
	int rc;

	log_init("vshare-scheduler", LOG_LVL_INFO);
	rc = parse_args(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	conf_defaults(&c);
	if (setup(&s, &c, &o) != 0) {
		conf_free(&c);
		return 1;
	}
	if (o.print_config) {
		char *text = conf_to_json(&c, s.path);

		rc = text ? (puts(text) < 0) : 1;
		free(text);
		conf_free(&c);
		return rc;
	}
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	s.loop = uv_default_loop();
	s.conf = &c;
	s.conf_path = o.config;
	s.conf_must_exist = o.config_given;
	s.log_level_arg = o.log_level;
	s.mx.version = VSHARE_VERSION;
	rc = srv_start(&s) == 0 ? 0 : 1;
	uv_run(s.loop, UV_RUN_DEFAULT);
	/* Run the close callbacks of everything srv_stop closed. */
	uv_run(s.loop, UV_RUN_DEFAULT);
	sched_free(s.sched);
	lockpage_destroy(&s);
	metrics_cache_free(&s.mcache);
	metrics_cache_free(&s.mcache_pub);
	names_unref(s.names);
	free(s.batch);
	free(s.uids);
	peerlog_free(&s); /* after the last line about a peer */
	uv_loop_close(s.loop);
	conf_free(&c);
	if (rc == 0)
		log_info("stopped");
	return rc;
}
