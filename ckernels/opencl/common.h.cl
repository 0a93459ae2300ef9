/* Included at the top of every tinyflow OpenCL program (the backend prepends it).
 * The program is built once per context and element type: -DT=float, or -DT=double -DUSE_FP64. */
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
