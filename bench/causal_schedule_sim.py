"""How evenly tile orders spread causal attention's work over the SMs (no GPU; seconds).

Causal row block ``bx`` of a head costs ``bx + 1`` key blocks. The kernel's time is the busiest
CTA's total cost, so each order below is reported as max / mean of the CTAs' totals (1.000 =
perfectly even). Orders:

* ``launch``: one CTA per tile, the hardware handing the next block (x fastest) to the first SM
  that frees up: what the default schedule gets today;
* ``static x-fastest``: persistent, CTA c takes tiles c, c + CTAs, ... in launch order, reversed x;
* ``dynamic longest-first``: persistent, a tile counter hands out all heads' longest row blocks
  first (balanced, but the CTAs in flight then read as many different heads' K/V as there are
  CTAs: far more than the L2 holds at S4096 D128);
* ``dynamic chunks of C heads``: the same within chunks of C heads (C x 2 MB of K/V at S4096
  D128 stays in the L2), chunk after chunk.

    python bench/causal_schedule_sim.py [--ctas 132]

Written for bench/NOTES.md (session 7): the case for a dynamic tile scheduler in persistent causal
attention before building it.
"""

import argparse
import heapq


def evenness(loads) -> float:
    return max(loads) / (sum(loads) / len(loads))


def dynamic(costs, ctas: int) -> float:
    """Each tile, in order, goes to the CTA that becomes free first."""
    free = [(0, c) for c in range(ctas)]
    loads = [0] * ctas
    for cost in costs:
        t, c = heapq.heappop(free)
        loads[c] = t + cost
        heapq.heappush(free, (t + cost, c))
    return evenness(loads)


def static_round_robin(costs, ctas: int) -> float:
    loads = [0] * ctas
    for u, cost in enumerate(costs):
        loads[u % ctas] += cost
    return evenness(loads)


def chunked_longest_first(gx: int, heads: int, chunk: int) -> list[int]:
    costs = []
    for first in range(0, heads, chunk):
        for level in reversed(range(gx)):
            costs += [level + 1] * min(chunk, heads - first)
    return costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctas", type=int, default=132, help="resident CTAs (SMs x blocks per SM)")
    args = parser.parse_args()
    cases = [("B8 H16 S4096, 128-row blocks", 32, 128), ("B8 H16 S8192, 128-row blocks", 64, 128),
             ("B8 H16 S2048, 128-row blocks", 16, 128), ("B2 H48 S1024, 128-row blocks", 8, 96)]
    print(f"max / mean CTA work over {args.ctas} CTAs (1.000 = even)")
    print(f"{'case':<30} {'launch':>7} {'static':>7} {'longest':>8} {'chunk 4':>8} {'chunk 8':>8} {'chunk 16':>9}")
    for label, gx, heads in cases:
        launch_order = [u % gx + 1 for u in range(gx * heads)]
        reversed_x = [gx - u % gx for u in range(gx * heads)]
        row = [dynamic(launch_order, args.ctas), static_round_robin(reversed_x, args.ctas),
               dynamic(chunked_longest_first(gx, heads, heads), args.ctas)]
        row += [dynamic(chunked_longest_first(gx, heads, c), args.ctas) for c in (4, 8, 16)]
        print(f"{label:<30} " + " ".join(f"{v:>{w}.3f}" for v, w in zip(row, (7, 7, 8, 8, 8, 9))))


if __name__ == "__main__":
    main()
