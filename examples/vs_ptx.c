/*
 * The examples' kernels as PTX, JIT-compiled by a real driver (sm_52 and
 * newer). The CUDA test driver ignores the image and runs built-ins of the
 * same names and parameters, so one source runs on both.
 *
 *   vs_sleep(u64 us)               spin on %globaltimer for us microseconds
 *   vs_spin(u64 us)                the same
 *   vs_sleep_ts(u64 us, u64 *out)  vs_sleep, then out[0]=start, out[1]=end
 *                                  (%globaltimer ns; one thread suffices)
 *   vs_add(f32 *a, f32 *b, f32 *c, s32 n)   c[i] = a[i] + b[i]
 *   vs_fill(f32 *p, f32 v, s32 n)           p[i] = v
 *   vs_timestamp(u64 *out)         out[0] = %globaltimer
 * vs_add and vs_fill use a grid-stride loop, so any launch shape covers n.
 */
#include "vs_common.h"

/* Spin until %globaltimer passes start + us * 1000; leaves start in
 * %rd5 and the last reading in %rd7. */
#define SPIN(label)                                         \
	"	mul.lo.u64 	%rd4, %rd1, 1000;\n"             \
	"	mov.u64 	%rd5, %globaltimer;\n"           \
	"	add.u64 	%rd6, %rd5, %rd4;\n"             \
	label ":\n"                                          \
	"	mov.u64 	%rd7, %globaltimer;\n"           \
	"	setp.lt.u64 	%p1, %rd7, %rd6;\n"              \
	"	@%p1 bra 	" label ";\n"

const char vs_ptx[] =
	".version 7.0\n"
	".target sm_52\n"
	".address_size 64\n"
	"\n"
	".visible .entry vs_sleep(\n"
	"	.param .u64 vs_sleep_us\n"
	")\n"
	"{\n"
	"	.reg .pred 	%p<2>;\n"
	"	.reg .b64 	%rd<8>;\n"
	"	ld.param.u64 	%rd1, [vs_sleep_us];\n"
	SPIN("$L_sleep")
	"	ret;\n"
	"}\n"
	"\n"
	".visible .entry vs_spin(\n"
	"	.param .u64 vs_spin_us\n"
	")\n"
	"{\n"
	"	.reg .pred 	%p<2>;\n"
	"	.reg .b64 	%rd<8>;\n"
	"	ld.param.u64 	%rd1, [vs_spin_us];\n"
	SPIN("$L_spin")
	"	ret;\n"
	"}\n"
	"\n"
	".visible .entry vs_sleep_ts(\n"
	"	.param .u64 vs_sleep_ts_us,\n"
	"	.param .u64 vs_sleep_ts_out\n"
	")\n"
	"{\n"
	"	.reg .pred 	%p<2>;\n"
	"	.reg .b64 	%rd<9>;\n"
	"	ld.param.u64 	%rd1, [vs_sleep_ts_us];\n"
	"	ld.param.u64 	%rd2, [vs_sleep_ts_out];\n"
	"	cvta.to.global.u64 	%rd3, %rd2;\n"
	SPIN("$L_sleep_ts")
	"	st.global.u64 	[%rd3], %rd5;\n"
	"	st.global.u64 	[%rd3+8], %rd7;\n"
	"	ret;\n"
	"}\n"
	"\n"
	".visible .entry vs_add(\n"
	"	.param .u64 vs_add_a,\n"
	"	.param .u64 vs_add_b,\n"
	"	.param .u64 vs_add_c,\n"
	"	.param .u32 vs_add_n\n"
	")\n"
	"{\n"
	"	.reg .pred 	%p<2>;\n"
	"	.reg .b32 	%r<8>;\n"
	"	.reg .f32 	%f<4>;\n"
	"	.reg .b64 	%rd<12>;\n"
	"	ld.param.u64 	%rd1, [vs_add_a];\n"
	"	ld.param.u64 	%rd2, [vs_add_b];\n"
	"	ld.param.u64 	%rd3, [vs_add_c];\n"
	"	ld.param.u32 	%r1, [vs_add_n];\n"
	"	cvta.to.global.u64 	%rd4, %rd1;\n"
	"	cvta.to.global.u64 	%rd5, %rd2;\n"
	"	cvta.to.global.u64 	%rd6, %rd3;\n"
	"	mov.u32 	%r2, %ctaid.x;\n"
	"	mov.u32 	%r3, %ntid.x;\n"
	"	mov.u32 	%r4, %tid.x;\n"
	"	mad.lo.s32 	%r5, %r2, %r3, %r4;\n"
	"	mov.u32 	%r6, %nctaid.x;\n"
	"	mul.lo.s32 	%r7, %r6, %r3;\n"
	"$L_add_loop:\n"
	"	setp.ge.s32 	%p1, %r5, %r1;\n"
	"	@%p1 bra 	$L_add_done;\n"
	"	mul.wide.s32 	%rd7, %r5, 4;\n"
	"	add.s64 	%rd8, %rd4, %rd7;\n"
	"	add.s64 	%rd9, %rd5, %rd7;\n"
	"	add.s64 	%rd10, %rd6, %rd7;\n"
	"	ld.global.f32 	%f1, [%rd8];\n"
	"	ld.global.f32 	%f2, [%rd9];\n"
	"	add.f32 	%f3, %f1, %f2;\n"
	"	st.global.f32 	[%rd10], %f3;\n"
	"	add.s32 	%r5, %r5, %r7;\n"
	"	bra.uni 	$L_add_loop;\n"
	"$L_add_done:\n"
	"	ret;\n"
	"}\n"
	"\n"
	".visible .entry vs_fill(\n"
	"	.param .u64 vs_fill_p,\n"
	"	.param .f32 vs_fill_v,\n"
	"	.param .u32 vs_fill_n\n"
	")\n"
	"{\n"
	"	.reg .pred 	%p<2>;\n"
	"	.reg .b32 	%r<8>;\n"
	"	.reg .f32 	%f<2>;\n"
	"	.reg .b64 	%rd<5>;\n"
	"	ld.param.u64 	%rd1, [vs_fill_p];\n"
	"	ld.param.f32 	%f1, [vs_fill_v];\n"
	"	ld.param.u32 	%r1, [vs_fill_n];\n"
	"	cvta.to.global.u64 	%rd2, %rd1;\n"
	"	mov.u32 	%r2, %ctaid.x;\n"
	"	mov.u32 	%r3, %ntid.x;\n"
	"	mov.u32 	%r4, %tid.x;\n"
	"	mad.lo.s32 	%r5, %r2, %r3, %r4;\n"
	"	mov.u32 	%r6, %nctaid.x;\n"
	"	mul.lo.s32 	%r7, %r6, %r3;\n"
	"$L_fill_loop:\n"
	"	setp.ge.s32 	%p1, %r5, %r1;\n"
	"	@%p1 bra 	$L_fill_done;\n"
	"	mul.wide.s32 	%rd3, %r5, 4;\n"
	"	add.s64 	%rd4, %rd2, %rd3;\n"
	"	st.global.f32 	[%rd4], %f1;\n"
	"	add.s32 	%r5, %r5, %r7;\n"
	"	bra.uni 	$L_fill_loop;\n"
	"$L_fill_done:\n"
	"	ret;\n"
	"}\n"
	"\n"
	".visible .entry vs_timestamp(\n"
	"	.param .u64 vs_timestamp_out\n"
	")\n"
	"{\n"
	"	.reg .b64 	%rd<4>;\n"
	"	ld.param.u64 	%rd1, [vs_timestamp_out];\n"
	"	cvta.to.global.u64 	%rd2, %rd1;\n"
	"	mov.u64 	%rd3, %globaltimer;\n"
	"	st.global.u64 	[%rd2], %rd3;\n"
	"	ret;\n"
	"}\n";
