"""The SM clock and board power while some GPU work runs, sampled by nvidia-smi every 20 ms
(shared by bench_common.sustained and mma_sync_ceiling.py; no torch needed).

    with ClockSampler() as clocks:
        ...                                # the work, for a second or more
    print(clocks.mhz, clocks.watts)        # medians after the first quarter of the samples
"""

import statistics
import subprocess


class ClockSampler:
    def __init__(self, device: int = 0):
        self.device = device
        self.mhz = self.watts = float("nan")

    def __enter__(self):
        self._sampler = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "20",
             "-i", str(self.device)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return self

    def __exit__(self, *exc):
        self._sampler.terminate()
        samples = [line.split(",") for line in self._sampler.communicate()[0].splitlines() if line.count(",") == 1]
        settled = samples[len(samples) // 4:]  # after the start and the clock's ramp
        if settled:
            self.mhz = statistics.median(float(c) for c, _ in settled)
            self.watts = statistics.median(float(w) for _, w in settled)
        return False
