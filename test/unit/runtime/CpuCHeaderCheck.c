/*===- CpuCHeaderCheck.c - fusert.h as C99 without the CUDA headers -===//
 *
 * CHeaderCheck.c compiled again with FUSERT_NO_CUDA_HEADERS (as a program
 * on a machine without the CUDA toolkit sees fusert.h: cudaStream_t is the
 * header's own declaration) into CpuRuntimeTest.
 *
 *===----------------------------------------------------------------------===*/
#include "CHeaderCheck.c"
