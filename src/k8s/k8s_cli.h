/*
 * What vshare's two Kubernetes programs (the device plugin and the DRA
 * driver) share on their command line and at their start: the usage
 * error, the options both take, the getopt loop with --help and
 * --version, and the signals that stop them.
 */
#ifndef VSHARE_K8S_CLI_H
#define VSHARE_K8S_CLI_H

#include <getopt.h>

#include <cstdint>
#include <cstdio>
#include <functional>

/* "PROG: WHAT[: ARG]" and where to look, on stderr; returns 2, the exit
 * status of a usage error. */
int k8s_bad(const char *prog, const char *what, const char *arg);

/* A memory size option in the shim's grammar, above 0 (kp_mem_arg): 0,
 * or k8s_bad's 2. */
int k8s_size_opt(const char *prog, const char *opt, const char *arg,
		 uint64_t *out);

/* --log-level: error, warn, info or debug, set at once; 0 or 2. */
int k8s_log_level_opt(const char *prog, const char *arg);

/* getopt_long over argv with the long options lo: --help prints usage
 * on stdout and --version "PROG VERSION" (both return 1, for an exit
 * status 0); every other option goes to take (its option's val and
 * argument), whose nonzero return ends the parse; an unknown option or
 * an argument left over is a usage error (2). 0 when all were taken. */
int k8s_parse(const char *prog, const char *version, void (*usage)(FILE *),
	      int argc, char **argv, const struct option *lo,
	      const std::function<int(int, const char *)> &take);

/* SIGINT, SIGTERM and SIGHUP blocked (before gRPC starts threads, which
 * inherit the mask) and read from the signalfd returned; SIGPIPE
 * ignored. -1 with errno when there is no signalfd. */
int k8s_stop_signals(void);

#endif
