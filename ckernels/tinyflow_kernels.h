/* tinyflow's C kernel library: every function the Python side may call.
 *
 * This header is the single source of truth: ckernels/build_ckernels.py reads it
 * verbatim into cffi's cdef, so it holds plain declarations only (no macros,
 * no include guards). Each function is documented where it is defined.
 */

/* runtime.c: what the library was built with */
const char *tf_build_flags(void);
int tf_openmp_enabled(void);
int tf_max_threads(void);
void tf_set_num_threads(int n);
