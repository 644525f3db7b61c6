/*
 * How a program finds the hooks (dlsym, cuGetProcAddress with and without
 * the per-thread flag), stream-ordered frees, and capture under the shim.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim_prog.h"

static void *driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (h == NULL)
		h = dlopen("libcuda.so.1", RTLD_NOW);
	CHECK(h != NULL);
	return h;
}

static int is_hook(const struct hooked *h)
{
	return strcmp(h->kind, "REAL") != 0;
}

/* Entry points every driver (the test driver included) has: each must
 * come back hooked whichever way it is looked up. */
static const char *const core[] = {
	"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
	"cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
	"cuLaunchHostFunc", "cuGraphLaunch", "cuGraphLaunch_ptsz",
	"cuMemcpy", "cuMemcpyAsync_ptsz", "cuMemcpyHtoD_v2",
	"cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoHAsync_v2_ptsz",
	"cuMemcpy2D_v2", "cuMemcpyPeer", "cuMemsetD8_v2", "cuMemsetD32Async",
	"cuMemsetD2D8_v2_ptds", "cuMemPrefetchAsync", "cuMemPrefetchAsync_v2",
	"cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuMemAlloc_v2",
	"cuMemAllocPitch_v2", "cuMemAllocAsync", "cuMemAllocFromPoolAsync_ptsz",
	"cuMemFree_v2", "cuMemFreeAsync", "cuMemCreate", "cuMemRelease",
	"cuMemGetInfo_v2", "cuMemAllocManaged", "cuDevicePrimaryCtxRetain",
	"cuCtxCreate_v2", "cuCtxDestroy_v2", "cuGetProcAddress",
	"cuGetProcAddress_v2",
};

int check_dlsym(void)
{
	void *h = driver();
	int found = 0, bad = 0;
	launch_fn launch;
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUdeviceptr p;
	const char *name;

	/* Before any CUDA call: the shim is not initialized yet. */
	for (size_t i = 0; i < sizeof(core) / sizeof(core[0]); i++) {
		CHECK(in_shim(dlsym(h, core[i]), &name));
		CHECK(strcmp(name, core[i]) == 0);
		CHECK(in_shim(dlsym(RTLD_DEFAULT, core[i]), NULL));
		CHECK(in_shim(dlsym(RTLD_NEXT, core[i]), NULL));
	}
	setup_ctx();
	for (int i = 0; i < n_hooked; i++) {
		void *fn = dlsym(h, hooked[i].name);

		if (fn == NULL)
			continue; /* this driver does not have it */
		if (!is_hook(&hooked[i])) {
			CHECK(!in_shim(fn, NULL));
			continue;
		}
		found++;
		if (!in_shim(fn, &name) || strcmp(name, hooked[i].name) != 0) {
			fprintf(stderr, "dlsym(%s) is not the shim's hook\n",
				hooked[i].name);
			bad++;
		}
	}
	printf("%d hooked symbols found through dlsym\n", found);
	CHECK(bad == 0);
	CHECK(dlsym(h, "cuNoSuchEntryPoint") == NULL);
	/* Lookups of other names are untouched. */
	CHECK(dlsym(RTLD_DEFAULT, "printf") == (void *)printf);

	launch = (launch_fn)dlsym(h, "cuLaunchKernel_ptsz");
	fill_and_check(launch, NULL, 6.0f);
	alloc = (CUresult (*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
	CK(alloc(&p, 4096));
	CHECK(is_managed(p));
	CK(cuMemFree(p));
	return 0;
}

/* Whether the driver exports a per-thread variant of base. */
static int driver_has_pt(void *h, const char *base)
{
	for (int i = 0; i < n_hooked; i++)
		if (hooked[i].per_thread && strcmp(hooked[i].base, base) == 0 &&
		    dlsym(h, hooked[i].name) != NULL)
			return 1;
	return 0;
}

/* The variant the driver selects at CUDA 13.0: the newest of the group
 * (per-thread or not) that it exports. */
static const char *expected_variant(void *h, const char *base, int pt)
{
	const struct hooked *best = NULL;

	for (int i = 0; i < n_hooked; i++) {
		const struct hooked *e = &hooked[i];

		if (strcmp(e->base, base) != 0 || e->per_thread != pt ||
		    dlsym(h, e->name) == NULL)
			continue;
		if (best == NULL || e->since > best->since)
			best = e;
	}
	return best != NULL ? best->name : NULL;
}

static const char *proc_name(const char *base, int version, cuuint64_t flags)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	void *fn = NULL;
	const char *name = NULL;

	CK(cuGetProcAddress_v2(base, &fn, version, flags, &st));
	CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS);
	CHECK(in_shim(fn, &name));
	return name;
}

static int check_all_bases(void *h, cuuint64_t flags)
{
	int n = 0, bad = 0;

	for (int i = 0; i < n_hooked; i++) {
		const struct hooked *e = &hooked[i];
		const char *want, *got = NULL;
		void *fn = NULL;
		int pt;

		/* each base once, hooked ones only */
		if (!is_hook(e) || (i > 0 && strcmp(hooked[i - 1].base, e->base) == 0))
			continue;
		pt = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM &&
		     driver_has_pt(h, e->base);
		want = expected_variant(h, e->base, pt);
		if (want == NULL)
			continue;
		CK(cuGetProcAddress_v2(e->base, &fn, 13000, flags, NULL));
		n++;
		if (!in_shim(fn, &got) || got == NULL || strcmp(got, want) != 0) {
			fprintf(stderr, "cuGetProcAddress(%s, flags %llu) gave %s, "
				"want %s\n", e->base, (unsigned long long)flags,
				got ? got : "an unhooked function", want);
			bad++;
		}
	}
	printf("flags %llu: %d base names checked\n", (unsigned long long)flags, n);
	return bad;
}

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t);

int check_procaddr(void)
{
	void *h = driver();
	void *fn = NULL;
	const char *name;
	CUdeviceptr p;
	CUresult (*alloc)(CUdeviceptr *, size_t);
	gpa_fn gpa;

	setup_ctx();
	CHECK(check_all_bases(h, CU_GET_PROC_ADDRESS_DEFAULT) == 0);
	CHECK(check_all_bases(h, CU_GET_PROC_ADDRESS_LEGACY_STREAM) == 0);
	CHECK(check_all_bases(h, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) == 0);

	/* The requested version selects the variant. */
	CHECK(!strcmp(proc_name("cuStreamBeginCapture", 10000, 0),
		      "cuStreamBeginCapture"));
	CHECK(!strcmp(proc_name("cuStreamBeginCapture", 12000, 0),
		      "cuStreamBeginCapture_v2"));
	CHECK(!strcmp(proc_name("cuStreamBeginCapture", 12000,
				CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
		      "cuStreamBeginCapture_v2_ptsz"));
	CHECK(!strcmp(proc_name("cuMemPrefetchAsync", 12000, 0),
		      "cuMemPrefetchAsync"));
	CHECK(!strcmp(proc_name("cuMemPrefetchAsync", 13000, 0),
		      "cuMemPrefetchAsync_v2"));
	CHECK(!strcmp(proc_name("cuGetProcAddress", 11030, 0),
		      "cuGetProcAddress"));
	CHECK(!strcmp(proc_name("cuGetProcAddress", 13000, 0),
		      "cuGetProcAddress_v2"));

	/* The CUDA 11/12 four-argument form (cuda.h 13 maps the name to
	 * the five-argument one, so it is looked up). */
	gpa = (gpa_fn)dlsym(h, "cuGetProcAddress");
	CHECK(in_shim((void *)gpa, &name) && !strcmp(name, "cuGetProcAddress"));
	CK(gpa("cuLaunchKernel", &fn, 12000,
	       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
	CHECK(in_shim(fn, &name) && !strcmp(name, "cuLaunchKernel_ptsz"));
	fill_and_check((launch_fn)fn, NULL, 7.0f);
	CK(gpa("cuMemAlloc", &fn, 12000, 0));
	CHECK(in_shim(fn, &name) && !strcmp(name, "cuMemAlloc_v2"));
	alloc = (CUresult (*)(CUdeviceptr *, size_t))fn;
	CK(alloc(&p, 4096));
	CHECK(is_managed(p));
	CK(cuMemFree(p));

	/* Not hooked: handed out as the driver's. */
	CK(gpa("cuCtxGetCurrent", &fn, 13000, 0));
	CHECK(fn != NULL && !in_shim(fn, NULL));
	return 0;
}

/*
 * The 32-bit cuMemAlloc of CUDA before 3.2, which the driver still
 * exports, asked for through cuGetProcAddress: the shim neither converts
 * nor counts it, so it is refused as the driver refuses a name too new
 * for the version asked (both forms of the call); from 3.2 on the answer
 * is the hook, which converts. The 32-bit cuMemFree is the driver's. cuGetExportTable (the driver's private
 * tables, which the CUDA runtime needs) is not hooked: the driver answers.
 */
int check_procaddr_legacy(void)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
	void *h = driver(), *fn = (void *)1;
	const void *table = (const void *)1;
	CUresult (*alloc)(CUdeviceptr *, size_t);
	const char *name;
	CUuuid id;
	CUdeviceptr p;
	gpa_fn gpa;

	setup_ctx();
	CHECK(dlsym(h, "cuMemAlloc") != NULL); /* the driver has it */
	CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 2000, 0, &st) ==
	      CUDA_ERROR_NOT_FOUND);
	CHECK(fn == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	gpa = (gpa_fn)dlsym(h, "cuGetProcAddress");
	fn = (void *)1;
	CHECK(gpa("cuMemAlloc", &fn, 3010, 0) == CUDA_ERROR_NOT_FOUND &&
	      fn == NULL);
	/* A free cannot escape the limit: the driver's own. */
	fn = NULL;
	CK(gpa("cuMemFree", &fn, 2000, 0));
	CHECK(fn != NULL && !in_shim(fn, NULL));
	CK(cuGetProcAddress_v2("cuMemAlloc", &fn, 3020, 0, &st));
	CHECK(in_shim(fn, &name) && !strcmp(name, "cuMemAlloc_v2"));
	alloc = (CUresult (*)(CUdeviceptr *, size_t))fn;
	CK(alloc(&p, 4096));
	CHECK(is_managed(p));
	CK(cuMemFree(p));

	fn = NULL;
	CK(cuGetProcAddress_v2("cuGetExportTable", &fn, 3000, 0, NULL));
	CHECK(fn != NULL && !in_shim(fn, NULL));
	CHECK(!in_shim(dlsym(h, "cuGetExportTable"), NULL));
	memset(&id, 0, sizeof(id));
	CHECK(cuGetExportTable(&table, &id) == CUDA_ERROR_NOT_SUPPORTED &&
	      table == NULL);
	return 0;
}

/* A stream-ordered free of converted memory happens only once the stream
 * has passed it; until then the memory stays and counts. */
int check_async_free(void)
{
	CUstream s;
	CUdeviceptr p;
	unsigned long long us = 300000;
	void *args[] = { &us };
	size_t f0, f1, t;

	setup_ctx();
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemGetInfo(&f0, &t));
	CK(cuMemAllocAsync(&p, 1 << 20, s));
	CHECK(is_managed(p));
	CK(cuMemGetInfo(&f1, &t));
	CHECK(f1 == f0 - (1 << 20));
	CK(cuLaunchKernel(kernel("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CK(cuMemFreeAsync(p, s));
	/* The stream is still sleeping: the memory must stay. */
	CHECK(alive(p));
	CK(cuMemGetInfo(&f1, &t));
	CHECK(f1 == f0 - (1 << 20));
	CHECK(alive(p));
	CK(cuStreamSynchronize(s));
	/* Any later call of the shim frees it. */
	CK(cuMemGetInfo(&f1, &t));
	CHECK(f1 == f0);
	CHECK(!alive(p));

	/* The legacy default stream, and a pool allocation. */
	CK(cuMemAllocAsync(&p, 4096, NULL));
	CHECK(is_managed(p));
	CK(cuMemFreeAsync(p, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemGetInfo(&f1, &t));
	CHECK(!alive(p) && f1 == f0);
	CK(cuStreamDestroy(s));
	return 0;
}

int check_capture(void)
{
	CUstream s;
	CUgraph g;
	CUgraphExec ge;
	CUdeviceptr p, q = 0;
	CUstreamCaptureStatus st;
	float v = 9.0f, host[16];
	int n = 16;
	void *args[] = { &p, &v, &n };

	setup_ctx();
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&p, sizeof(host)));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CK(cuLaunchKernel(kernel("vs_fill"), 1, 1, 1, 16, 1, 1, 0, s, args, NULL));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&ge, g, 0));
	CK(cuGraphLaunch(ge, s));
	CK(cuStreamSynchronize(s));
	CK(cuMemcpyDtoH(host, p, sizeof(host)));
	CHECK(host[0] == 9.0f && host[15] == 9.0f);
	CK(cuGraphExecDestroy(ge));
	CK(cuGraphDestroy(g));

	/* Inside a capture, stream-ordered allocation is left to the
	 * driver (a memory node of the graph: not managed). */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemAllocAsync(&q, 4096, s) != CUDA_SUCCESS || !is_managed(q));
	g = NULL;
	if (cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g != NULL)
		CK(cuGraphDestroy(g));
	CK(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
	/* Work after the captures runs as before. */
	fill_and_check(cuLaunchKernel, s, 10.0f);
	CK(cuMemFree(p));
	CK(cuStreamDestroy(s));
	return 0;
}

/*
 * Every submission hook reaches the gate: with VSHARE_REQUIRE_SCHEDULER=1
 * and no scheduler the gate never opens, so each call must block before
 * the driver sees it (its arguments, all zero, are never used). Calls
 * that are not submissions, and launches into a capture, do not block.
 */
typedef CUresult (*any_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t,
			   uintptr_t, uintptr_t, uintptr_t, uintptr_t,
			   uintptr_t, uintptr_t, uintptr_t, uintptr_t);

struct gated_call {
	const char *name;
	any_fn fn;
	CUcontext ctx;
	int returned;
	pthread_t t;
};

static void *gated_thread(void *arg)
{
	struct gated_call *c = arg;

	CK(cuCtxSetCurrent(c->ctx));
	(void)c->fn(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	__atomic_store_n(&c->returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int check_gated(void)
{
	static struct gated_call calls[256];
	void *h = driver();
	CUcontext ctx = setup_ctx();
	CUstream s;
	CUgraph g;
	size_t f, t;
	int n = 0, bad = 0;
	unsigned long long us = 1;
	void *args[] = { &us };

	/* A launch into a capture is not a submission: it passes. */
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuLaunchKernel(kernel("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphDestroy(g));

	for (int i = 0; i < n_hooked && n < 256; i++) {
		void *fn;

		if (strcmp(hooked[i].kind, "SUBMIT") != 0 &&
		    strcmp(hooked[i].kind, "COPY") != 0)
			continue;
		fn = dlsym(h, hooked[i].name);
		if (fn == NULL)
			continue;
		calls[n] = (struct gated_call){ hooked[i].name, (any_fn)fn, ctx,
						0, 0 };
		CHECK(pthread_create(&calls[n].t, NULL, gated_thread,
				     &calls[n]) == 0);
		n++;
	}
	usleep(400000);
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&calls[i].returned, __ATOMIC_SEQ_CST)) {
			fprintf(stderr, "%s did not wait at the gate\n",
				calls[i].name);
			bad++;
		}
	/* Not submissions: no waiting. */
	CK(cuMemGetInfo(&f, &t));
	printf("%d submission hooks waited at the closed gate\n", n - bad);
	CHECK(n >= 40);
	/* The blocked threads cannot be joined: leave at once. */
	_exit(bad == 0 ? 0 : 1);
}
