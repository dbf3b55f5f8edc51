// The op table with its CUDA calls going to the nvcc-built kernels (only with VRAMLAB_HAVE_CUDA).
#define VRAMLAB_CUDA_OPS_ABI gpu
#define VRAMLAB_OPS_TABLE_FUNCTION gpu_op_table
#include "tests/ops/op_table.cpp"
