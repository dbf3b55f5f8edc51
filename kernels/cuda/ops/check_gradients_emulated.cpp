// check_gradients.cu compiled for the CPU: the SIMT emulator runs every CUDA thread as a fiber.
#include "kernels/cuda/ops/check_gradients.cu"
