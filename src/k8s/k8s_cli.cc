/* The Kubernetes programs' shared command line and start (k8s_cli.h). */
#include <sys/signalfd.h>

#include <csignal>
#include <string>

#include "k8s_cli.h"
#include "kp.h"

int k8s_bad(const char *prog, const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s\n(see %s --help)\n", prog, what,
		arg ? ": " : "", arg ? arg : "", prog);
	return 2;
}

int k8s_size_opt(const char *prog, const char *opt, const char *arg,
		 uint64_t *out)
{
	std::string why = kp_mem_arg(opt, arg, out);

	return why.empty() ? 0 : k8s_bad(prog, why.c_str(), nullptr);
}

int k8s_log_level_opt(const char *prog, const char *arg)
{
	int level = log_level_parse(arg);

	if (level < 0)
		return k8s_bad(prog, "--log-level takes error, warn, info or "
			       "debug", arg);
	log_set_level((enum log_level)level);
	return 0;
}

int k8s_parse(const char *prog, const char *version, void (*usage)(FILE *),
	      int argc, char **argv, const struct option *lo,
	      const std::function<int(int, const char *)> &take)
{
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "h", lo, nullptr)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 1;
		}
		if (ch == 'v') {
			printf("%s %s\n", prog, version);
			return 1;
		}
		if (ch == '?')
			return k8s_bad(prog, "bad option", nullptr);
		if ((rc = take(ch, optarg)) != 0)
			return rc;
	}
	if (optind < argc)
		return k8s_bad(prog, "unexpected argument", argv[optind]);
	return 0;
}

int k8s_stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, nullptr);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC);
}
