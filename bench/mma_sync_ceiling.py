"""How fast mma.sync itself runs on this GPU: the ceiling under the Ampere-class GEMM path
(issue 4 asks for 0.6x cuBLAS, whose Hopper kernels use wgmma).

A C++ program (built here with nvcc for sm_90a) keeps every SM busy with mma.sync and nothing
else, and prints TFLOP/s (TOP/s for int8) per way:

- ``regs``: operands in registers, 16 independent accumulator tiles per warp (no memory at all);
- ``ldsm``: a 64x64 warp tile fed from shared memory the way the GEMM path feeds it, per k16
  step 4 ldmatrix.x4 for A and 4 for B, then 32 mma.sync (the HMMA : LDSM ratio of our kernel);

for fp16 and bf16 into f32, fp16 into f16 and int8 into s32, at 4, 8 and 16 warps per SM (ldsm: 4
and 8; its 128 accumulator registers a thread leave no room for 16). Each
row is the median of 7 CUDA-event timings. The ``ldsm`` fp16 row at 8 warps per SM is what
bench/ampere_gemm.py's 128x256 tile (8 warps, one CTA per SM) can reach at best.

With --clocks, the fp16 ways again, each sustained for 2 s with the SM clock and power sampled.

    python bench/mma_sync_ceiling.py [--build-only] [--clocks]
"""

import argparse
import subprocess
import tempfile
from pathlib import Path

from gpu_clocks import ClockSampler

SOURCE = r"""
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { auto e = (call); if (e != cudaSuccess) { \
  std::printf("error %s at %s\n", cudaGetErrorString(e), #call); std::exit(1); } } while (0)

// one mma.sync per kind: D (+)= A B with A: 4 x b32, B: 2 x b32, C/D: 4 x b32 (f16 accumulators: 2)
struct F16F32 { static constexpr int acc = 4, k = 16; };
struct BF16F32 { static constexpr int acc = 4, k = 16; };
struct F16F16 { static constexpr int acc = 2, k = 16; };
struct S8S32 { static constexpr int acc = 4, k = 32; };

template <typename Kind> __device__ __forceinline__ void mma(uint32_t* d, const uint32_t* a, const uint32_t* b);
template <> __device__ __forceinline__ void mma<F16F32>(uint32_t* d, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<BF16F32>(uint32_t* d, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<F16F16>(uint32_t* d, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
               : "+r"(d[0]), "+r"(d[1]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<S8S32>(uint32_t* d, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldsm_x4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// operands in registers, TILES independent accumulators: the tensor pipe's own rate
template <typename Kind, int TILES>
__global__ void from_registers(const uint32_t* seed, uint32_t* out, int steps) {
  uint32_t a[4], b[2], d[TILES][Kind::acc] = {};
  for (int i = 0; i < 4; ++i) a[i] = seed[(threadIdx.x + i) & 31];
  for (int i = 0; i < 2; ++i) b[i] = seed[(threadIdx.x + 7 * i) & 31];
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
#pragma unroll
    for (int t = 0; t < TILES; ++t) mma<Kind>(d[t], a, b);
  }
  uint32_t sum = 0;
  for (int t = 0; t < TILES; ++t) for (int i = 0; i < Kind::acc; ++i) sum ^= d[t][i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// a 64x64 warp tile fed by ldmatrix, as the GEMM path's: per k step 4 A + 4 B ldmatrix.x4, 32 mma
template <typename Kind>
__global__ void from_shared(const uint32_t* seed, uint32_t* out, int steps) {
  extern __shared__ uint4 smem[];  // 32 KB, conflict-free: each 8-lane phase reads 128 contiguous bytes
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) smem[i] = make_uint4(seed[i & 31], seed[(i + 1) & 31], i, ~i);
  __syncthreads();
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + (threadIdx.x & 31) * 16;
  uint32_t d[4][8][Kind::acc] = {};
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    uint32_t a[4][4], b[4][4];
    const uint32_t step = base + (s & 7) * 4096;
#pragma unroll
    for (int i = 0; i < 4; ++i) { ldsm_x4(a[i], step + i * 512); ldsm_x4(b[i], step + 2048 + i * 512); }
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int n = 0; n < 8; ++n) mma<Kind>(d[m][n], a[m], &b[n / 2][(n & 1) * 2]);
  }
  uint32_t sum = 0;
  for (int m = 0; m < 4; ++m) for (int n = 0; n < 8; ++n) for (int i = 0; i < Kind::acc; ++i) sum ^= d[m][n][i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

template <typename F>
double median_ms(F launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  launch();  // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <typename Kind>
void row(const char* name, int sms, const uint32_t* seed, uint32_t* out) {
  const double mma_flops = 2.0 * 16 * 8 * Kind::k;
  std::printf("%-10s", name);
  for (int warps : {4, 8, 16}) {  // per SM: one CTA of `warps` warps on each SM
    const int steps = 4096, threads = warps * 32;
    double ms = median_ms([&] { from_registers<Kind, 16><<<sms, threads>>>(seed, out, steps); });
    std::printf(" %8.0f", mma_flops * 16 * steps * warps * sms / ms / 1e9);
  }
  for (int warps : {4, 8}) {  // 128 accumulator registers a thread: 16 warps would not fit
    const int steps = 1024, threads = warps * 32;
    auto kernel = from_shared<Kind>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 32768));
    double ms = median_ms([&] { kernel<<<sms, threads, 32768>>>(seed, out, steps); });
    std::printf(" %8.0f", mma_flops * 32 * steps * warps * sms / ms / 1e9);
  }
  std::printf("\n");
}

// fp16 -> f32 only, one way, launched back to back for `seconds`: the rate once the clocks settle
double sustained(bool shared, int warps, double seconds, int sms, const uint32_t* seed, uint32_t* out) {
  const int steps = shared ? 1024 : 4096, threads = warps * 32;
  const double flops = 2.0 * 16 * 8 * 16 * (shared ? 32 : 16) * steps * warps * sms;
  CHECK(cudaFuncSetAttribute(from_shared<F16F32>, cudaFuncAttributeMaxDynamicSharedMemorySize, 32768));
  auto launch = [&] {
    if (shared) from_shared<F16F32><<<sms, threads, 32768>>>(seed, out, steps);
    else from_registers<F16F32, 16><<<sms, threads>>>(seed, out, steps);
  };
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  float total = 0;
  while (total < seconds * 1e3) {
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < 20; ++i) launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t / 20);
    total += t;
  }
  std::sort(ms.begin(), ms.end());
  return flops / ms[ms.size() / 2] / 1e9;
}

int main(int argc, char** argv) {
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint32_t *seed, *out;
  CHECK(cudaMalloc(&seed, 2048 * sizeof(uint32_t)));
  CHECK(cudaMalloc(&out, sms * 512 * sizeof(uint32_t)));
  std::vector<uint32_t> host(2048);
  for (int i = 0; i < 2048; ++i) host[i] = 0x3c003c00u ^ (i * 2654435761u & 0x03ff03ffu);  // finite fp16 pairs
  CHECK(cudaMemcpy(seed, host.data(), host.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  if (argc == 4) {  // sustained <regs|ldsm> <warps> <seconds>
    std::printf("%.0f\n", sustained(argv[1][0] == 'l', std::atoi(argv[2]), std::atof(argv[3]), sms, seed, out));
    return 0;
  }
  std::printf("%d SMs; TFLOP/s (int8: TOP/s), one CTA per SM\n", sms);
  std::printf("%-10s %8s %8s %8s %8s %8s\n", "kind", "regs w4", "regs w8", "regs w16", "ldsm w4", "ldsm w8");
  row<F16F32>("f16->f32", sms, seed, out);
  row<BF16F32>("bf16->f32", sms, seed, out);
  row<F16F16>("f16->f16", sms, seed, out);
  row<S8S32>("s8->s32", sms, seed, out);
  return 0;
}
"""


def build(workdir: Path) -> Path:
    src, exe = workdir / "mma_sync_ceiling.cu", workdir / "mma_sync_ceiling"
    src.write_text(SOURCE)
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", str(src), "-o", str(exe)],
                   check=True)
    return exe


def sustained_rows(exe: Path, seconds=2.0):
    """fp16 -> f32 ways run back to back for ``seconds`` each with nvidia-smi sampling the SM clock
    and power: the ceiling per GHz, to set against a GEMM's (bench/ampere_gemm.py --clocks)."""
    print(f"\nfp16 -> f32, each way alone for {seconds:.0f} s (clock and power: medians of 20 ms samples)")
    print(f"{'way':10} {'TFLOP/s':>8} {'SM MHz':>7} {'W':>5} {'TFLOP/s per GHz':>16}")
    for way, warps in (("regs", 8), ("regs", 16), ("ldsm", 8)):
        with ClockSampler() as clocks:
            tflops = float(subprocess.run([str(exe), way, str(warps), str(seconds)], check=True,
                                          capture_output=True, text=True).stdout)
        print(f"{way + ' w' + str(warps):10} {tflops:8.0f} {clocks.mhz:7.0f} {clocks.watts:5.0f} "
              f"{tflops / clocks.mhz * 1e3:16.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-only", action="store_true", help="compile the program and stop (no GPU needed)")
    parser.add_argument("--clocks", action="store_true", help="then fp16 -> f32 sustained for 2 s a way, with the "
                        "SM clock and power sampled (TFLOP/s per GHz)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl_mma_ceiling_") as tmp:
        exe = build(Path(tmp))
        if args.build_only:
            print(f"built {exe.name}")
            return
        subprocess.run([str(exe)], check=True)
        if args.clocks:
            sustained_rows(exe)


if __name__ == "__main__":
    main()
