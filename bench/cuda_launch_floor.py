"""What a kernel launch costs this host with no Python at all: the floor under
``cuda_call_overhead.py``'s rows (issue 4's 5 us target is per call from Python).

A C++ program (built here with nvcc) launches the same tiny kernel as the overhead table (x + 1
over 1024 floats, 8 blocks of 128 threads) in batches of back-to-back launches on one stream and
prints the median per launch for each way of launching:

- ``<<<>>>``: the CUDA runtime's triple-chevron launch;
- ``cudaLaunchKernelEx``: what the wrapper TVM generates for our kernels calls;
- ``cuLaunchKernel``: the driver API with the function handle looked up once;
- ``wrapper steps``: cudaGetDevice twice (device guard + stream lookup) and cudaLaunchKernelEx,
  the C-side work of our entry function besides the argument checks;
- ``<<<>>> stream 0``: the same launch on the legacy default stream, torch's current stream
  unless a program sets another (the Python table's launches go there).

    python bench/cuda_launch_floor.py [--launches 20000] [--rounds 7]
"""

import argparse
import subprocess
import tempfile
from pathlib import Path

SOURCE = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void add_one(const float* x, float* y) {
  int i = blockIdx.x * 128 + threadIdx.x;
  y[i] = x[i] + 1.0f;
}

#define CHECK(call) do { auto e = (call); if (e != 0) { std::printf("error %d at %s\n", (int)e, #call); std::exit(1); } } while (0)

template <typename F>
double per_launch_us(F launch, int launches, int rounds, cudaStream_t stream) {
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    CHECK(cudaStreamSynchronize(stream));
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) launch();
    CHECK(cudaStreamSynchronize(stream));
    std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    samples.push_back(took.count() / launches);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int main(int argc, char** argv) {
  int launches = std::atoi(argv[1]), rounds = std::atoi(argv[2]);
  float *x, *y;
  CHECK(cudaMalloc(&x, 1024 * sizeof(float)));
  CHECK(cudaMalloc(&y, 1024 * sizeof(float)));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(8);
  config.blockDim = dim3(128);
  config.stream = stream;
  CUfunction function;
  CHECK(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&function), (const void*)add_one));
  // the driver's cuLaunchKernel through the runtime, so that no libcuda.so link is needed
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, CUstream, void**, void**);
  LaunchFn cu_launch = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", reinterpret_cast<void**>(&cu_launch), 12000,
                                         cudaEnableDefault, &found));
  void* params[] = {&x, &y};
  auto chevrons = [&] { add_one<<<8, 128, 0, stream>>>(x, y); };
  auto launch_ex = [&] { CHECK(cudaLaunchKernelEx(&config, add_one, (const float*)x, y)); };
  auto driver = [&] { CHECK(cu_launch(function, 8, 1, 1, 128, 1, 1, 0, (CUstream)stream, params, nullptr)); };
  auto wrapper = [&] {
    int device;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaGetDevice(&device));
    CHECK(cudaLaunchKernelEx(&config, add_one, (const float*)x, y));
  };
  // torch's current stream by default is the legacy default stream (0), where the JIT's launches go
  auto legacy = [&] { add_one<<<8, 128, 0, 0>>>(x, y); };
  per_launch_us(chevrons, launches, 1, stream);  // warm-up: module load, first launch
  std::printf("<<<>>>              %6.2f us\n", per_launch_us(chevrons, launches, rounds, stream));
  std::printf("cudaLaunchKernelEx  %6.2f us\n", per_launch_us(launch_ex, launches, rounds, stream));
  std::printf("cuLaunchKernel      %6.2f us\n", per_launch_us(driver, launches, rounds, stream));
  std::printf("wrapper steps       %6.2f us\n", per_launch_us(wrapper, launches, rounds, stream));
  std::printf("<<<>>> stream 0     %6.2f us\n", per_launch_us(legacy, launches, rounds, 0));
  std::vector<float> host(1024), back(1024);
  for (int i = 0; i < 1024; ++i) host[i] = 0.5f * i;
  CHECK(cudaMemcpy(x, host.data(), 1024 * sizeof(float), cudaMemcpyHostToDevice));
  driver();
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(back.data(), y, 1024 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 1024; ++i)
    if (back[i] != host[i] + 1.0f) { std::printf("wrong result at %d\n", i); return 1; }
  return 0;
}
"""


def build(workdir: Path) -> Path:
    src, exe = workdir / "launch_floor.cu", workdir / "launch_floor"
    src.write_text(SOURCE)
    subprocess.run(["nvcc", "-O2", "-std=c++17", "-arch=sm_80", str(src), "-o", str(exe)], check=True)
    return exe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20000, help="back-to-back launches per timed batch")
    parser.add_argument("--rounds", type=int, default=7, help="batches per way (median over them)")
    parser.add_argument("--build-only", action="store_true", help="compile the program and stop (no GPU needed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl_launch_floor_") as tmp:
        exe = build(Path(tmp))
        if args.build_only:
            print(f"built {exe.name}")
            return
        print(f"kernel launch from C++, {args.rounds} x {args.launches} launches per way (median per launch)")
        subprocess.run([str(exe), str(args.launches), str(args.rounds)], check=True)


if __name__ == "__main__":
    main()
