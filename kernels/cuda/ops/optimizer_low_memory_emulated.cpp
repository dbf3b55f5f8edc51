// optimizer_low_memory.cu compiled for the CPU: the SIMT emulator runs every CUDA thread as a
// fiber.
#include "kernels/cuda/ops/optimizer_low_memory.cu"
