/* Shared by every kernel file (not part of the cffi interface).
 *
 * Each kernel file includes this file, then tinyflow_kernels.h (tf_parallel_for, TF_PARALLEL_MIN).
 * Parallel kernels hand tinyflow's thread pool (threads.c) a chunk function and a struct
 * with their arguments: tf_parallel_for(n, cost, chunk, &args) calls chunk(&args, start, stop)
 * on one contiguous part of [0, n) per thread, and runs everything on the calling thread when
 * `cost` (about the number of values touched) is below TF_PARALLEL_MIN (tinyflow_kernels.h):
 * below that, handing work to another core costs more than it saves. The loops over a chunk
 * are plain C that GCC vectorizes; on x86-64 with GCC they are compiled for AVX-512, AVX2+FMA
 * and baseline SSE2, and the best version for the running CPU is picked at load time.
 * TF_CLONES_256 leaves out AVX-512, for loops over arrays that stream from memory: see the optimizer
 * updates (optim_generic.h), which pick one build or the other by the arrays' size.
 */
#ifndef TINYFLOW_COMMON_H
#define TINYFLOW_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tf_math.h" /* vectorisable exp, log, log1p, tanh, sigmoid, erf (ckernels/include) */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(TINYFLOW_NO_CLONES)
#define TF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define TF_CLONES_256 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TF_CLONES
#define TF_CLONES_256
#endif

#endif
