/*
 * Modules, libraries, functions and launches. Any image is accepted; the
 * functions it offers are the built-in kernels, found by name.
 */
#include "td.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct CUfunc_st {
	uint32_t magic;
	const struct td_kernel *k;
	struct CUfunc_st *next;
};

/* A module and a library are the same thing here: a list of functions
 * handed out, freed when it is unloaded. */
struct CUmod_st {
	uint32_t magic;
	struct CUfunc_st *funcs;
};

static CUresult mod_new(CUmodule *out, const void *image)
{
	struct CUmod_st *m;
	CUresult rc = td_check_init();
	struct CUctx_st *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = td_current_ctx(&c)) != CUDA_SUCCESS)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = TD_MAGIC_MOD;
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult mod_unload(struct CUmod_st *m)
{
	if (!m || m->magic != TD_MAGIC_MOD)
		return CUDA_ERROR_INVALID_HANDLE;
	while (m->funcs) {
		struct CUfunc_st *f = m->funcs;

		m->funcs = f->next;
		f->magic = 0;
		free(f);
	}
	m->magic = 0;
	free(m);
	return CUDA_SUCCESS;
}

static CUresult mod_get(struct CUmod_st *m, const char *name, struct CUfunc_st **out)
{
	const struct td_kernel *k;
	struct CUfunc_st *f;

	if (!m || m->magic != TD_MAGIC_MOD)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	k = td_kernel_find(name);
	if (!k)
		return CUDA_ERROR_NOT_FOUND;
	td_lock();
	for (f = m->funcs; f; f = f->next)
		if (f->k == k)
			break;
	if (!f && (f = calloc(1, sizeof(*f)))) {
		f->magic = TD_MAGIC_FUNC;
		f->k = k;
		f->next = m->funcs;
		m->funcs = f;
	}
	td_unlock();
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = f;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	return mod_new(module, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
			    unsigned int numOptions, CUjit_option *options,
			    void **optionValues)
{
	(void)numOptions;
	(void)options;
	(void)optionValues;
	return mod_new(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return mod_new(module, fatCubin);
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	if (!fname)
		return CUDA_ERROR_INVALID_VALUE;
	if (access(fname, R_OK) != 0)
		return CUDA_ERROR_FILE_NOT_FOUND;
	return mod_new(module, fname);
}

CUresult cuModuleUnload(CUmodule hmod)
{
	return mod_unload(hmod);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	return mod_get(hmod, name, hfunc);
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
			   CUjit_option *jitOptions, void **jitOptionsValues,
			   unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions,
			   void **libraryOptionValues,
			   unsigned int numLibraryOptions)
{
	(void)jitOptions;
	(void)jitOptionsValues;
	(void)numJitOptions;
	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	return mod_new((CUmodule *)library, code);
}

CUresult cuLibraryUnload(CUlibrary library)
{
	return mod_unload((struct CUmod_st *)library);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	return mod_get((struct CUmod_st *)library, name,
		       (struct CUfunc_st **)pKernel);
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	if (!pMod)
		return CUDA_ERROR_INVALID_VALUE;
	*pMod = (CUmodule)library;
	return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct CUfunc_st *f = (struct CUfunc_st *)kernel;

	if (!f || f->magic != TD_MAGIC_FUNC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	*pFunc = f;
	return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	if (!hfunc || hfunc->magic != TD_MAGIC_FUNC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 16; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
	default: *pi = 0; break;
	}
	return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	(void)attrib;
	(void)value;
	return hfunc && hfunc->magic == TD_MAGIC_FUNC ?
		CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	(void)config;
	return hfunc && hfunc->magic == TD_MAGIC_FUNC ?
		CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Copies the arguments into the op, from kernelParams or from the
 * CU_LAUNCH_PARAM_BUFFER_POINTER form of extra. */
static CUresult pack_args(const struct td_kernel *k, void **params, void **extra,
			  unsigned char *out)
{
	size_t need = td_kernel_args_size(k);
	int i;

	if (params) {
		for (i = 0; i < k->nparams; i++) {
			if (!params[i])
				return CUDA_ERROR_INVALID_VALUE;
			memcpy(out + td_kernel_offset(k, i), params[i], k->sizes[i]);
		}
		return CUDA_SUCCESS;
	}
	if (extra) {
		void *buf = NULL;
		size_t size = 0;

		for (i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				memcpy(&size, extra[i + 1], sizeof(size));
			else
				return CUDA_ERROR_INVALID_VALUE;
		}
		if (!buf || size < need)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(out, buf, need);
		return CUDA_SUCCESS;
	}
	return k->nparams ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, const unsigned int grid[3],
		       const unsigned int block[3], CUstream h, int ptsz,
		       void **params, void **extra)
{
	struct td_op *op;
	CUresult rc = td_check_init();
	int i;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!f || f->magic != TD_MAGIC_FUNC)
		return CUDA_ERROR_INVALID_HANDLE;
	for (i = 0; i < 3; i++)
		if (grid[i] == 0 || block[i] == 0)
			return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned long long)block[0] * block[1] * block[2] > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	op = td_op_new(TD_OP_KERNEL);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.kernel.k = f->k;
	memcpy(op->u.kernel.grid, grid, sizeof(op->u.kernel.grid));
	memcpy(op->u.kernel.block, block, sizeof(op->u.kernel.block));
	rc = pack_args(f->k, params, extra, op->u.kernel.args);
	if (rc != CUDA_SUCCESS) {
		td_op_free(op);
		return rc;
	}
	return td_submit(h, ptsz, op, 0);
}

#define DIMS(x, y, z) ((const unsigned int[3]){ (x), (y), (z) })

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
			unsigned int gz, unsigned int bx, unsigned int by,
			unsigned int bz, unsigned int shmem, CUstream h,
			void **params, void **extra)
{
	(void)shmem;
	return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), h, 0, params, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
			     unsigned int gz, unsigned int bx, unsigned int by,
			     unsigned int bz, unsigned int shmem, CUstream h,
			     void **params, void **extra)
{
	(void)shmem;
	return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), h, TD_PTDS,
		      params, extra);
}

static CUresult launch_ex(const CUlaunchConfig *cfg, CUfunction f,
			  void **params, void **extra, int ptsz)
{
	if (!cfg)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, DIMS(cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ),
		      DIMS(cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ),
		      cfg->hStream, ptsz, params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
			  void **kernelParams, void **extra)
{
	return launch_ex(config, f, kernelParams, extra, 0);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
			       void **kernelParams, void **extra)
{
	return launch_ex(config, f, kernelParams, extra, TD_PTDS);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx,
				   unsigned int gy, unsigned int gz,
				   unsigned int bx, unsigned int by,
				   unsigned int bz, unsigned int shmem,
				   CUstream h, void **params)
{
	(void)shmem;
	return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), h, 0, params, NULL);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
					unsigned int gy, unsigned int gz,
					unsigned int bx, unsigned int by,
					unsigned int bz, unsigned int shmem,
					CUstream h, void **params)
{
	(void)shmem;
	return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), h, TD_PTDS,
		      params, NULL);
}

static CUresult host_fn(CUstream h, CUhostFn fn, void *data, int ptsz)
{
	struct td_op *op;

	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	op = td_op_new(TD_OP_HOSTFN);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.host.fn = fn;
	op->u.host.data = data;
	return td_submit(h, ptsz, op, 0);
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	return host_fn(hStream, fn, userData, 0);
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
	return host_fn(hStream, fn, userData, TD_PTDS);
}

static CUresult add_callback(CUstream h, CUstreamCallback cb, void *data,
			     unsigned int flags, int ptsz)
{
	struct td_op *op;

	if (!cb || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	op = td_op_new(TD_OP_CALLBACK);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.host.cb = cb;
	op->u.host.handle = h;
	op->u.host.data = data;
	return td_submit(h, ptsz, op, 0);
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
			     void *userData, unsigned int flags)
{
	return add_callback(hStream, callback, userData, flags, 0);
}

CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
				  void *userData, unsigned int flags)
{
	return add_callback(hStream, callback, userData, flags, TD_PTDS);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks,
						      CUfunction func,
						      int blockSize,
						      size_t dynamicSMemSize)
{
	(void)dynamicSMemSize;
	if (!func || func->magic != TD_MAGIC_FUNC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!numBlocks || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	*numBlocks = 2048 / blockSize > 32 ? 32 : 2048 / blockSize;
	return CUDA_SUCCESS;
}
