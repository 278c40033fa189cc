"""CUDA-event timing shared by the comparison scripts."""
import torch


def median_ms(f, n=30, warm=5):
    """Median of `n` CUDA-event timings of `f()` after `warm` untimed calls."""
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(n):
        s.record()
        f()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[n // 2]
