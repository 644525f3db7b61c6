/*
 * vshare-cdi: `vshare-cdi generate [OPTIONS]`, the same command as
 * `vsharectl cdi generate`, until vsharectl's command table carries it.
 */
#include <stdio.h>
#include <string.h>

#include "vc.h"
#include "vc_cdi.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "generate") == 0)
		return vc_cdi_generate(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
			  strcmp(argv[1], "--help") == 0)) {
		vc_cdi_usage(stdout);
		return VC_EXIT_OK;
	}
	fprintf(stderr, "usage: vshare-cdi generate [OPTIONS] (see --help)\n");
	return VC_EXIT_USAGE;
}
