/*
 * vsharectl internals: its command line (vc_cmd.c), talking to the daemon
 * (vc_io.c) and printing its status for people (vc_print.c).
 */
#ifndef VSHARE_VC_H
#define VSHARE_VC_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "vshare/proto.h"

/* Exit codes, for scripts. */
#define VC_EXIT_OK      0
#define VC_EXIT_ERROR   1  /* the daemon refused or failed */
#define VC_EXIT_USAGE   2
#define VC_EXIT_DOWN    3  /* the daemon is not running */

/* Connect to the daemon's socket: an fd, or -1 with the exit code in *ec
 * and a message printed. */
int vc_connect(const char *path, int *ec);
/* The same, with why it failed in why (n bytes) instead of printed: a
 * stale or missing socket (*ec VC_EXIT_DOWN), or a refusal with what to
 * do about it (the first directory the user may not enter, or the
 * socket's group and whether users may join it). */
int vc_connect_why(const char *path, int *ec, char *why, size_t n);

struct vc_reply {
	int32_t status;      /* VS_OK or VS_E_* */
	char   *text;        /* JSON or message, NUL-terminated, malloc'd */
	size_t  len;
	int     keep_error;  /* set by the caller: an ERROR frame's code and
			      * words in status and text, not printed; a
			      * daemon of a protocol version we do not speak
			      * too (status VS_E_VERSION, its version in
			      * theirs, its words, if any, in text) */
	uint32_t theirs;     /* VS_E_VERSION: the daemon's version, 0 unknown */
};

/* Send one request, in the oldest protocol version that has its type (so
 * that an older daemon serves what it knows, and refuses the rest with
 * VS_E_VERSION), and read its reply. 0, or an exit code (message
 * printed). */
int vc_call(int fd, uint16_t type, const void *payload, uint32_t len,
	    struct vc_reply *out);

/* Print a status JSON document for people; 0 or VC_EXIT_ERROR. wide:
 * labels and user names whole, the table as wide as they need. */
int vc_print_status(const char *json, int wide);

/* The most words a command's argument has. */
#define VC_ARGS_MAX 2

/* A command line, parsed. */
struct vc_args {
	const char *socket;
	int json;
	int wide;              /* status: whole labels (--wide) */
	const char *gpu;
	const struct vc_cmd *cmd;
	const char *args[VC_ARGS_MAX]; /* the command's argument, its words */
};

struct vc_cmd;

/* Fill the request of a command from its argument's words: 0 or
 * VC_EXIT_USAGE. */
typedef int (*vc_build_fn)(const struct vc_cmd *, const char *const *args,
			   struct vs_admin_set *m);
/* Print the reply for people or scripts: an exit code. */
typedef int (*vc_show_fn)(const struct vc_args *, const struct vc_reply *);
/* A command with a command line of its own: vsharectl's options (the
 * socket) and its own words (argv[0] its name, then its arguments and
 * options); an exit code. */
typedef int (*vc_local_fn)(const struct vc_args *a, int argc, char **argv);

struct vc_cmd {
	const char *name;
	const char *arg;       /* its argument, NULL if none */
	uint32_t    nargs;     /* the argument's words (arg set: 1 or more) */
	uint32_t    lo, hi;    /* range of a numeric argument */
	const char *unit;      /* of a numeric argument */
	int         admin;     /* needs root or the admin group */
	int         gpu;       /* takes --gpu */
	const char *help;
	uint16_t    type;      /* VS_MSG_* of the request */
	uint32_t    value;     /* the request's value, unless build sets it */
	vc_build_fn build;
	vc_show_fn  show;
	vc_local_fn local;     /* set: no request; the rest of the line is its */
};

/* The commands: n rows, in the order of --help. */
const struct vc_cmd *vc_cmds(size_t *n);
/* --help's text. */
void vc_usage(FILE *f);
/* Parse a command line (getopt: set optind to 0 before parsing another).
 * 0, VC_EXIT_USAGE (message printed), or -1 after --help or --version.
 * A local command (a row with `local`) runs here, since it needs nothing
 * of what follows parsing: -1 when it succeeded, else its exit code. */
int vc_parse_args(int argc, char **argv, struct vc_args *a);
/* The request of a parsed command; 0 or VC_EXIT_USAGE. */
int vc_build(const struct vc_args *a, struct vs_admin_set *m);

#endif
