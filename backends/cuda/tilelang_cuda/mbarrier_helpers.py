"""The cuda definitions of the SIMT kit's mbarrier helpers (T.alloc_barrier and its waits and
arrivals; contract in tilelang_core/simt/transform/mbarriers.py), of ``tl_set_max_nreg`` and of the
programmatic-dependent-launch pair ``tl_pdl_trigger`` / ``tl_pdl_sync``.

On-demand helpers like warp_intrinsics.py's: a kernel's source gets only the ones it calls. mbarriers
exist from sm_80 (``try_wait`` from sm_90; sm_80 polls ``test_wait``; lowering.py refuses them
below sm_80); ``setmaxnreg`` is sm_90a's, a hint compiled only where the architecture has it.
"""

from __future__ import annotations

_D = "__device__ __forceinline__"
_ADDR = "static_cast<unsigned>(__cvta_generic_to_shared(bar))"

MBARRIER_HELPERS = {
    "tl_mbarrier_init": (f"{_D} void tl_mbarrier_init(void* bar, unsigned count) {{\n"
                         f"  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"({_ADDR}), \"r\"(count) : \"memory\");\n}}\n"),
    # the initialization visible to the other threads (and the async proxy) before the block barrier
    "tl_mbarrier_fence_init": (f"{_D} void tl_mbarrier_fence_init() {{\n"
                               "#if __CUDA_ARCH__ >= 900\n"
                               "  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
                               "#else\n  __threadfence_block();\n#endif\n}\n"),
    # release: this thread's earlier shared-memory writes reach the waiters; on sm_90 also their
    # wgmma and TMA reads (the async proxy), which the arrive's release alone does not order
    "tl_mbarrier_arrive": (f"{_D} void tl_mbarrier_arrive(void* bar) {{\n"
                           "#if __CUDA_ARCH__ >= 900\n"
                           "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
                           "#endif\n"
                           f"  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"({_ADDR}) : \"memory\");\n}}\n"),
    # acquire; on sm_90 then also for this thread's wgmma reads (the async proxy) of what it sees
    "tl_mbarrier_wait": (f"{_D} void tl_mbarrier_wait(void* bar, int parity) {{\n"
                         "  asm volatile(\"{\\n.reg .pred p;\\nTL_MBAR_WAIT_%=:\\n\"\n"
                         "#if __CUDA_ARCH__ >= 900\n"
                         "               \"mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n\"\n"
                         "#else\n"
                         "               \"mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1;\\n\"\n"
                         "#endif\n"
                         "               \"@!p bra TL_MBAR_WAIT_%=;\\n}\\n\"\n"
                         f"               :: \"r\"({_ADDR}), \"r\"(parity) : \"memory\");\n"
                         "#if __CUDA_ARCH__ >= 900\n"
                         "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
                         "#endif\n}\n"),
    # the current phase waits for this thread's cp.async copies so far (no .noinc: not an arrival)
    "tl_mbarrier_track": (f"{_D} void tl_mbarrier_track(void* bar) {{\n"
                          f"  asm volatile(\"cp.async.mbarrier.arrive.shared::cta.b64 [%0];\" :: \"r\"({_ADDR}) : \"memory\");\n}}\n"),
    # T.set_max_nreg: setmaxnreg exists on sm_90a (the arch-specific feature set) only
    "tl_set_max_nreg": (f"template <int N, int INC>\n{_D} void tl_set_max_nreg() {{\n"
                        "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
                        "  if (INC) asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" :: \"n\"(N));\n"
                        "  else asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" :: \"n\"(N));\n"
                        "#endif\n}\n"),
    # T.pdl_trigger / T.pdl_sync (programmatic dependent launch): griddepcontrol exists from sm_90;
    # below it the kernels run in stream order and there is nothing to signal or wait for
    "tl_pdl_trigger": (f"{_D} void tl_pdl_trigger() {{\n"
                       "#if __CUDA_ARCH__ >= 900\n  cudaTriggerProgrammaticLaunchCompletion();\n#endif\n}\n"),
    "tl_pdl_sync": (f"{_D} void tl_pdl_sync() {{\n"
                    "#if __CUDA_ARCH__ >= 900\n  cudaGridDependencySynchronize();\n#endif\n}\n"),
    # thread-block clusters (T.ClusterKernel, sm_90): the kernel's cluster shape, a marker that
    # hopper/intrinsics.with_kernel_attributes turns into __cluster_dims__; this block's rank; the
    # cluster barrier (arrive releases this thread's writes to the cluster, wait acquires theirs)
    "tl_cluster_dims": f"{_D} void tl_cluster_dims(int, int, int) {{}}\n",
    "tl_cluster_rank": (f"{_D} unsigned tl_cluster_rank() {{\n  unsigned r;\n"
                        "  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\\n\" : \"=r\"(r));\n  return r;\n}\n"),
    "tl_cluster_arrive": (f"{_D} void tl_cluster_arrive() {{\n"
                          "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\" ::: \"memory\");\n}\n"),
    "tl_cluster_arrive_relaxed": (f"{_D} void tl_cluster_arrive_relaxed() {{\n"
                                  "  asm volatile(\"barrier.cluster.arrive.relaxed.aligned;\\n\" ::: \"memory\");\n}\n"),
    "tl_cluster_wait": (f"{_D} void tl_cluster_wait() {{\n"
                        "  asm volatile(\"barrier.cluster.wait.acquire.aligned;\\n\" ::: \"memory\");\n}\n"),
    "tl_cluster_sync": (f"{_D} void tl_cluster_sync() {{\n"
                        "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n"
                        "barrier.cluster.wait.acquire.aligned;\\n\" ::: \"memory\");\n}\n"),
    # T.alloc_cluster_barrier: arrive on the barrier at the same offset in the block of rank ``cta``
    # (mapa), releasing at the cluster's scope; a wait that acquires at it
    "tl_mbarrier_arrive_remote": (f"{_D} void tl_mbarrier_arrive_remote(void* bar, int cta) {{\n"
                                  f"  unsigned remote, local = {_ADDR};\n"
                                  "  asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(remote) "
                                  ": \"r\"(local), \"r\"(cta));\n"
                                  "  asm volatile(\"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\" "
                                  ":: \"r\"(remote) : \"memory\");\n}\n"),
    "tl_mbarrier_wait_cluster": (f"{_D} void tl_mbarrier_wait_cluster(void* bar, int parity) {{\n"
                                 "  asm volatile(\"{\\n.reg .pred p;\\nTL_MBAR_WAITC_%=:\\n\"\n"
                                 "               \"mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\\n\"\n"
                                 "               \"@!p bra TL_MBAR_WAITC_%=;\\n}\\n\"\n"
                                 f"               :: \"r\"({_ADDR}), \"r\"(parity) : \"memory\");\n}}\n"),
    # T.sync_grid: the grid barrier of a cooperative launch (codegen.py launches its kernels so)
    "tl_sync_grid": ("#include <cooperative_groups.h>\n"
                     f"{_D} void tl_sync_grid() {{ cooperative_groups::this_grid().sync(); }}\n"),
}

__all__ = ["MBARRIER_HELPERS"]
