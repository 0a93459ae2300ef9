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
 * TF_CLONES_256 leaves out AVX-512, for loops that stream arrays from memory and divide or take square
 * roots (the optimizer updates): wider vectors cannot fetch memory faster, and on AMD Zen 5 the 512-bit
 * loops were slower, Adam over 10M elements 5.1 ms against 4.5 ms on one thread (-ffast-math's 512-bit
 * loop 4.9 ms), RMSProp 4.6 against 3.3 ms.
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
