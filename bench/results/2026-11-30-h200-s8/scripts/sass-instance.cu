#include "LinearSkinny.cuh"
template __global__ void sol::kernels::linear_skinny<2048, 8, 2, 8, __nv_bfloat16, false, 0, false, true>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int, const __nv_bfloat16*, float);
