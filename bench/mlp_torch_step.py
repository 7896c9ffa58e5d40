#!/usr/bin/python3
"""The one-worker MLP step of `gradex train` in PyTorch, on one thread: the
yardstick for train/mlp.cpp's compute.

Same work as gradex's compute-ms: gather a batch of 64 Fashion-MNIST-sized
samples by index, forward 784-256-256-10 with ReLU, softmax cross-entropy,
backward, SGD with momentum 0.9. The inputs are random: the arithmetic, not
the values, sets the time. Prints the median step time over --steps timed
steps (after warm-up) as "median_ms X", and the range.

Needs Debian's python3-torch (run with /usr/bin/python3); see
bench/train_step.py --torch for the side-by-side comparison.
"""
import argparse
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()

    # One thread, as one gradex worker computes on one.
    torch.set_num_threads(1)
    torch.manual_seed(0)
    samples, features, classes = 60000, 28 * 28, 10
    x_all = torch.rand(samples, features)
    y_all = torch.randint(0, classes, (samples,))
    model = torch.nn.Sequential(
        torch.nn.Linear(features, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        idx = torch.randint(0, samples, (args.batch,))
        x, y = x_all[idx], y_all[idx]
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, batch {args.batch}")
    print(f"median_ms {statistics.median(times):.4f}")
    print(f"range_ms {min(times):.4f} {max(times):.4f}")


if __name__ == "__main__":
    main()
