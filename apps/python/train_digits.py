#!/usr/bin/env python3
"""train_digits: the Python twin of ag-train. Trains an MLP classifier (64 -> hidden -> 10, ReLU,
softmax cross-entropy) on the handwritten digits of python3-sklearn, data-parallel over --devices:
each device takes a shard of every batch, the gradients are summed with ag.all_reduce, and every
device takes the same SGD-with-momentum step. The same model, split, shuffles and seeds as
ag-train: the same losses, bit for bit, on the same devices.

    PYTHONPATH=build/python python3 apps/python/train_digits.py --devices=sim:0,sim:1
"""
import argparse
import gzip
import math
import os
import sys
import time

import numpy as np

import actorgraph as ag

DIGITS = ["/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
          "/usr/share/python3-sklearn/datasets/data/digits.csv.gz"]
MASK = (1 << 64) - 1


def splitmix64(state):
    """The next state and draw of splitmix64 (apps/ag-train/digits.cpp)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def read_digits(path):
    """Pixels (float32, scaled to [0, 1]) and labels (int32) of digits.csv.gz."""
    with gzip.open(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
    if rows.shape[1] != 65:
        raise SystemExit(f"{path}: {rows.shape[1]} fields a line, expected 64 pixels and a digit")
    return (rows[:, :64] / 16.0).astype(np.float32), rows[:, 64].astype(np.int32)


def split(pixels, labels, seed, test):
    """A Fisher-Yates shuffle by splitmix64 of seed; the first `test` images are the test set."""
    order = list(range(len(labels)))
    state = seed
    for i in range(len(order), 1, -1):
        state, r = splitmix64(state)
        j = r % i
        order[i - 1], order[j] = order[j], order[i - 1]
    order = np.array(order)
    return (pixels[order[test:]], labels[order[test:]]), (pixels[order[:test]], labels[order[:test]])


class Replica:
    """One device's parameters and momenta (the same initial bits on every device)."""

    def __init__(self, rt, device, hidden, seed):
        self.device = device
        self.w1 = rt.normal((64, hidden), 0.0, math.sqrt(2.0 / 64), seed * 4 + 1, device)
        self.w2 = rt.normal((hidden, 10), 0.0, math.sqrt(2.0 / hidden), seed * 4 + 2, device)
        self.b1 = rt.full((hidden,), 0.0, device)
        self.b2 = rt.full((10,), 0.0, device)
        self.velocity = {name: rt.full(getattr(self, name).shape, 0.0, device)
                         for name in ("w1", "b1", "w2", "b2")}

    def forward_backward(self, x, y, onehot, dt, batch):
        w1, b1, w2, b2 = (p.astype(dt) for p in (self.w1, self.b1, self.w2, self.b2))
        z1 = ag.matmul(x, w1) + b1
        h = ag.relu(z1)
        out = ag.matmul(h, w2) + b2
        loss = ag.cross_entropy(out, y).astype(ag.float32)
        dlogits = (ag.softmax(out, 1) - onehot) * (1.0 / batch)
        grads = {"w2": ag.matmul(h.transpose(0, 1), dlogits).astype(ag.float32),
                 "b2": dlogits.sum((0,)).astype(ag.float32)}
        dh = ag.matmul(dlogits, w2.transpose(0, 1))
        dz1 = dh * ag.gt(z1, 0.0).astype(dt)
        grads["w1"] = ag.matmul(x.transpose(0, 1), dz1).astype(ag.float32)
        grads["b1"] = dz1.sum((0,)).astype(ag.float32)
        return loss, grads

    def update(self, grads, lr, momentum):
        for name, g in grads.items():
            v = g if momentum == 0.0 else self.velocity[name] * momentum + g
            self.velocity[name] = v
            setattr(self, name, getattr(self, name) - v * lr)

    def logits(self, x, dt):
        h = ag.relu(ag.matmul(x, self.w1.astype(dt)) + self.b1.astype(dt))
        return ag.matmul(h, self.w2.astype(dt)) + self.b2.astype(dt)


def train(args, train_set, test_set):
    dt = ag.bfloat16 if args.dtype == "bfloat16" else ag.float32
    devices = [d for d in ag.parse_devices(args.devices) if d != "cpu"]
    with ag.Runtime(devices=devices, per_device_per_process=args.mode == "process") as rt:
        places = rt.devices or ["cpu"]
        shard = args.batch // len(places)
        reps = [Replica(rt, d, args.hidden, args.seed) for d in places]
        pixels, labels = train_set
        steps = len(labels) // args.batch
        t0 = time.monotonic()
        for epoch in range(args.epochs):
            (px, lb), _ = split(pixels, labels, args.seed * 1000003 + epoch, 0)
            loss_sum = [None] * len(places)
            for step in range(steps):
                grads = []
                for d, where in enumerate(places):
                    first = step * args.batch + d * shard
                    yv = lb[first:first + shard]
                    hot = np.zeros((shard, 10), dtype=np.float32)
                    hot[np.arange(shard), yv] = 1.0
                    x = rt.tensor(px[first:first + shard], device=where).astype(dt)
                    y = rt.tensor(yv, device=where)
                    onehot = rt.tensor(hot, device=where).astype(dt)
                    loss, g = reps[d].forward_backward(x, y, onehot, dt, float(args.batch))
                    grads.append(g)
                    loss_sum[d] = loss if loss_sum[d] is None else loss_sum[d] + loss
                summed = {name: ag.all_reduce([g[name] for g in grads]) if len(places) > 1
                          else [grads[0][name]] for name in ("w1", "b1", "w2", "b2")}
                for d, r in enumerate(reps):
                    r.update({name: parts[d] for name, parts in summed.items()},
                             args.lr, args.momentum)
                rt.mark_step()  # a step: replayed as a CUDA graph once it repeats
            total = sum(l.item() for l in loss_sum)
            loss = np.float32(total / steps / len(places))
            print(f"epoch {epoch + 1:3d}  loss {float(loss):.9g}", flush=True)
        seconds = time.monotonic() - t0
        r = reps[0]
        tx, ty = test_set
        x = rt.tensor(tx, device=r.device).astype(dt)
        y = rt.tensor(ty.astype(np.int64), device=r.device)
        right = ag.eq(r.logits(x, dt).argmax(1), y).astype(ag.float32).sum()
        return right.item() / len(ty), seconds, steps


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", default="sim:0,sim:1")
    p.add_argument("--mode", choices=["thread", "process"], default="thread")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--data", default=None)
    p.add_argument("--min-accuracy", type=float, default=0.0)
    args = p.parse_args()
    path = args.data or next((d for d in DIGITS if os.path.exists(d)), None)
    if path is None:
        p.error("the digits (python3-sklearn's digits.csv.gz) are not installed; --data=FILE")
    pixels, labels = read_digits(path)
    train_set, test_set = split(pixels, labels, args.seed, len(labels) // 5)
    print(f"digits: {len(train_set[1])} training, {len(test_set[1])} test images; {args.dtype} on "
          f"{args.devices}, {args.mode} mode, batch {args.batch}, hidden {args.hidden}")
    accuracy, seconds, steps = train(args, train_set, test_set)
    print(f"test accuracy {accuracy:.4f} ({len(test_set[1])} images); {seconds:.2f} s of training, "
          f"{seconds * 1e3 / args.epochs / steps:.2f} ms a step")
    return 0 if accuracy >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
