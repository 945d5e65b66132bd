// Stands in for the CUDA headers when clang's CUDA front end syntax-checks the blessed kernels
// (tests/cuda_syntax.rs): clang-14 -x cuda -nocudainc -include cuda_shim.h -fsyntax-only.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
struct __cuda_uint3 { unsigned x, y, z; };
extern const __attribute__((device)) __cuda_uint3 threadIdx, blockIdx, blockDim, gridDim;
extern "C" __attribute__((device)) void __syncthreads(void);
struct float2 { float x, y; };
struct float3 { float x, y, z; };
struct float4 { float x, y, z, w; };
struct int2 { int x, y; };
struct int3 { int x, y, z; };
struct int4 { int x, y, z, w; };
__device__ inline float2 make_float2(float x, float y) { return {x, y}; }
__device__ inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
__device__ inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
__device__ inline int2 make_int2(int x, int y) { return {x, y}; }
__device__ inline int3 make_int3(int x, int y, int z) { return {x, y, z}; }
__device__ inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
extern "C" __device__ float fminf(float, float);
extern "C" __device__ float fmaxf(float, float);
extern "C" __device__ float fabsf(float);
extern "C" __device__ float expf(float);
extern "C" __device__ float logf(float);
extern "C" __device__ float sqrtf(float);
extern "C" __device__ float sinf(float);
extern "C" __device__ float cosf(float);
extern "C" __device__ float tanhf(float);
extern "C" __device__ float floorf(float);
extern "C" __device__ float fmodf(float, float);
extern "C" __device__ int __float2int_rz(float);
extern "C" __device__ int min(int, int);
extern "C" __device__ int max(int, int);
extern "C" __device__ int abs(int);
