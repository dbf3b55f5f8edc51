// flash_attention.cu compiled for the CPU: the SIMT emulator runs every CUDA thread as a fiber.
#include "kernels/cuda/ops/flash_attention.cu"
