"""What a kernel launch costs this host with no Python at all: the floor under
``cuda_call_overhead.py``'s rows (issue 4's 5 us target is per call from Python).

A C++ program (built here with nvcc) launches the same tiny kernel as the overhead table (x + 1
over 1024 floats, 8 blocks of 128 threads) in batches of back-to-back launches on one stream and
prints the median per launch for each way of launching (the ways in turns, batch by batch):

- ``<<<>>>``: the CUDA runtime's triple-chevron launch;
- ``cudaLaunchKernelEx``: what the wrapper TVM generates for our kernels calls;
- ``cuLaunchKernel``: the driver API with the function handle looked up once;
- ``wrapper steps``: cudaGetDevice twice (device guard + stream lookup) and cudaLaunchKernelEx,
  the C-side work of our entry function besides the argument checks;
- ``library cudaKernel_t``: the kernel from a cubin loaded at run time (cudaLibraryLoadData +
  cudaLibraryGetKernel) launched with cudaLaunchKernelExC, as the split host wrapper launches;
- ``library CUfunction``: the same kernel's CUfunction for this context (cuKernelGetFunction,
  once) launched with cuLaunchKernel;
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
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

__global__ void add_one(const float* x, float* y) {
  int i = blockIdx.x * 128 + threadIdx.x;
  y[i] = x[i] + 1.0f;
}

#define CHECK(call) do { auto e = (call); if (e != 0) { std::printf("error %d at %s\n", (int)e, #call); std::exit(1); } } while (0)

double batch_us(const std::function<void()>& launch, int launches, cudaStream_t stream) {
  CHECK(cudaStreamSynchronize(stream));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) launch();
  CHECK(cudaStreamSynchronize(stream));
  std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  return took.count() / launches;
}

struct Way {
  const char* name;
  std::function<void()> launch;
  cudaStream_t stream;
  std::vector<double> samples;
};

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
  // the driver's entry points through the runtime, so that no libcuda.so link is needed
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, CUstream, void**, void**);
  using KernelFunctionFn = CUresult (*)(CUfunction*, CUkernel);
  LaunchFn cu_launch = nullptr;
  KernelFunctionFn cu_kernel_function = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", reinterpret_cast<void**>(&cu_launch), 12000,
                                         cudaEnableDefault, &found));
  CHECK(cudaGetDriverEntryPointByVersion("cuKernelGetFunction", reinterpret_cast<void**>(&cu_kernel_function),
                                         12000, cudaEnableDefault, &found));
  // the same kernel from a cubin loaded at run time, as the split host wrapper loads its kernels
  std::ifstream file(argv[3], std::ios::binary);
  std::vector<char> cubin((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  cudaLibrary_t library;
  cudaKernel_t library_kernel;
  CHECK(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CHECK(cudaLibraryGetKernel(&library_kernel, library, "add_one_cubin"));
  CUfunction library_function;
  CHECK(cu_kernel_function(&library_function, reinterpret_cast<CUkernel>(library_kernel)));
  void* params[] = {&x, &y};
  std::vector<Way> ways;
  ways.push_back({"<<<>>>", [&] { add_one<<<8, 128, 0, stream>>>(x, y); }, stream});
  ways.push_back({"cudaLaunchKernelEx", [&] { CHECK(cudaLaunchKernelEx(&config, add_one, (const float*)x, y)); },
                  stream});
  ways.push_back({"cuLaunchKernel", [&] {
    CHECK(cu_launch(function, 8, 1, 1, 128, 1, 1, 0, (CUstream)stream, params, nullptr)); }, stream});
  ways.push_back({"wrapper steps", [&] {
    int device;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaGetDevice(&device));
    CHECK(cudaLaunchKernelEx(&config, add_one, (const float*)x, y));
  }, stream});
  // our split host wrapper's launch: a cudaKernel_t from cudaLibraryGetKernel, cudaLaunchKernelExC
  ways.push_back({"library cudaKernel_t", [&] {
    CHECK(cudaLaunchKernelExC(&config, (const void*)library_kernel, params)); }, stream});
  ways.push_back({"library CUfunction", [&] {
    CHECK(cu_launch(library_function, 8, 1, 1, 128, 1, 1, 0, (CUstream)stream, params, nullptr)); }, stream});
  // torch's current stream by default is the legacy default stream (0), where the JIT's launches go
  ways.push_back({"<<<>>> stream 0", [&] { add_one<<<8, 128, 0, 0>>>(x, y); }, (cudaStream_t)0});
  for (auto& way : ways) batch_us(way.launch, launches / 4, way.stream);  // warm-up: module load, first launch
  for (int r = 0; r < rounds; ++r)  // in turns, so that host clock drift falls on every way alike
    for (auto& way : ways) way.samples.push_back(batch_us(way.launch, launches, way.stream));
  for (auto& way : ways) {
    std::sort(way.samples.begin(), way.samples.end());
    std::printf("%-22s %6.2f us\n", way.name, way.samples[way.samples.size() / 2]);
  }
  std::vector<float> host(1024), back(1024);
  for (int i = 0; i < 1024; ++i) host[i] = 0.5f * i;
  for (auto* way : {&ways[2], &ways[4], &ways[5]}) {
    CHECK(cudaMemset(y, 0, 1024 * sizeof(float)));
    CHECK(cudaMemcpy(x, host.data(), 1024 * sizeof(float), cudaMemcpyHostToDevice));
    way->launch();
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(back.data(), y, 1024 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; ++i)
      if (back[i] != host[i] + 1.0f) { std::printf("%s: wrong result at %d\n", way->name, i); return 1; }
  }
  return 0;
}
"""

KERNEL = r"""
extern "C" __global__ void add_one_cubin(const float* x, float* y) {
  int i = blockIdx.x * 128 + threadIdx.x;
  y[i] = x[i] + 1.0f;
}
"""


def build(workdir: Path) -> Path:
    src, exe = workdir / "launch_floor.cu", workdir / "launch_floor"
    src.write_text(SOURCE)
    subprocess.run(["nvcc", "-O2", "-std=c++17", "-arch=sm_80", str(src), "-o", str(exe)], check=True)
    (workdir / "add_one.cu").write_text(KERNEL)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", str(workdir / "add_one.cu"), "-o", str(workdir / "add_one.cubin")],
                   check=True)
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
        subprocess.run([str(exe), str(args.launches), str(args.rounds), str(Path(tmp) / "add_one.cubin")], check=True)


if __name__ == "__main__":
    main()
