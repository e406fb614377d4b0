"""What the kernel benchmarks (attention_kernels.py, grouped_gemm.py) share: CUDA-event timing and
writing their result file."""
import json
import statistics


def median_ms(torch, fn, reps, warmup=3, before=None, after=None):
    """The median of `reps` timings of fn() in ms, by CUDA events around it, after `warmup` untimed
    runs; before() and after() run outside the timed span on each round (set up, clean up)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + reps):
        if before:
            before()
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if after:
            after()
        if i >= warmup:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def write_result(path, result):
    """The result as JSON at `path` (nothing when path is empty); the script's exit code 0."""
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    return 0
