#!/usr/bin/env python3
"""ag-bench --mode=steps's ag-train step in PyTorch, for comparison (docs/BENCHMARKS.md, "Steps as
CUDA graphs"): an MLP 64 -> 256 -> 10, batch 128, cross entropy, SGD with momentum 0.9, its batch
copied from the host each step; eager, then captured by hand in a CUDA graph (static inputs the
batch is copied into). Prints microseconds per step. Exit 3 where there is no PyTorch or no GPU."""
import sys
import time

try:
    import torch
except ImportError:
    print("pytorch_steps: no PyTorch here", file=sys.stderr)
    sys.exit(3)

if not torch.cuda.is_available():
    print("pytorch_steps: no CUDA device", file=sys.stderr)
    sys.exit(3)

STEPS, WARMUP = 500, 50
dev = torch.device("cuda:0")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x_host = torch.full((128, 64), 0.25).pin_memory()
y_host = (torch.arange(128) % 10).pin_memory()


def step(x, y):
    opt.zero_grad(set_to_none=False)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def timed(run):
    for _ in range(WARMUP):
        run()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        run()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / STEPS * 1e6


eager = timed(lambda: step(x_host.to(dev, non_blocking=True), y_host.to(dev, non_blocking=True)))

static_x = x_host.to(dev)
static_y = y_host.to(dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):  # warm up on a side stream, as torch.cuda.graphs asks
    for _ in range(3):
        step(static_x, static_y)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_loss = step(static_x, static_y)


def replay():
    static_x.copy_(x_host, non_blocking=True)
    static_y.copy_(y_host, non_blocking=True)
    graph.replay()


captured = timed(replay)
print(f"pytorch eager step: {eager:.1f} us")
print(f"pytorch captured step: {captured:.1f} us")
