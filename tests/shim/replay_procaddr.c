/*
 * Replays a list of cuGetProcAddress requests (cuda13_procaddr.txt: the
 * CUDA runtime's own at its start-up) the way the runtime makes them: the
 * driver opened with dlopen, cuGetProcAddress_v2 found with dlsym, every
 * request made through it. Prints one line per request,
 *   symbol version flags CUresult status where
 * where "-" (no function), "driver", or "shim:NAME" (the shim's hook
 * NAME), for procaddr_replay.py to compare with and without the shim.
 * Usage: replay_procaddr LIST
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
			    CUdriverProcAddressQueryResult *);

static const char *where(void *fn)
{
	static char buf[160];
	Dl_info info;

	if (fn == NULL)
		return "-";
	if (dladdr(fn, &info) && info.dli_fname != NULL &&
	    strstr(info.dli_fname, "libvshare") != NULL) {
		snprintf(buf, sizeof(buf), "shim:%s",
			 info.dli_sname != NULL ? info.dli_sname : "?");
		return buf;
	}
	return "driver";
}

int main(int argc, char **argv)
{
	char line[512], sym[256];
	int version, n = 0;
	unsigned long long flags;
	void *h;
	gpa2_fn gpa;
	FILE *f;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s LIST\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "r");
	h = dlopen("libcuda.so.1", RTLD_NOW);
	if (f == NULL || h == NULL) {
		fprintf(stderr, "replay_procaddr: cannot open %s or the driver\n",
			argv[1]);
		return 2;
	}
	gpa = (gpa2_fn)dlsym(h, "cuGetProcAddress_v2");
	if (gpa == NULL)
		return 2;
	while (fgets(line, sizeof(line), f) != NULL) {
		CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
		void *fn = NULL;
		CUresult r;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%255s %d %llu", sym, &version, &flags) != 3)
			return 2;
		if (strcmp(sym, "\"\"") == 0)
			sym[0] = '\0';
		r = gpa(sym, &fn, version, flags, &st);
		printf("%s %d %llu %d %d %s\n", sym[0] ? sym : "\"\"", version,
		       flags, (int)r, (int)st, where(fn));
		n++;
	}
	fclose(f);
	return n > 0 ? 0 : 2;
}
