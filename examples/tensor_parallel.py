"""Tensor parallelism with gelu_ext: a small Transformer feed-forward stack trained on 2 CPU
processes (gloo), its weights sharded as Megatron-LM shards them, against the same model
trained in one process.

Each block is x + down(activation(up(LayerNorm(x)))), with the activation one of gelu_ext's:
GELU, BiasGELU (after a bias-free up projection) and GEGLU on two projections (gate and up).
`parallelize_module` splits up (and gate) by columns (ColwiseParallel) and down by rows
(RowwiseParallel), so that each process holds half of every hidden layer and the activations
between up and down stay sharded: gelu_ext's ops take those DTensors and keep their sharding
(BiasGELU's bias is sharded like the hidden layer). One all-reduce per block joins the halves.

    python examples/tensor_parallel.py               # 2 processes, 60 steps: ~10 s on a CPU
    python examples/tensor_parallel.py --steps 200
    torchrun --nproc-per-node 2 examples/tensor_parallel.py   # started by torchrun instead
"""

import argparse
import copy
import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_module, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import gelu_ext

WORLD_SIZE = 2


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, activation):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.activation = activation
        self.up = nn.Linear(dim, hidden, bias=activation != "bias_gelu")
        if activation == "geglu":
            self.gate = nn.Linear(dim, hidden)
        elif activation == "bias_gelu":
            self.bias_gelu = gelu_ext.BiasGELU(hidden, "tanh")
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.norm(x)
        if self.activation == "gelu":
            h = gelu_ext.gelu(self.up(h))
        elif self.activation == "bias_gelu":
            h = self.bias_gelu(self.up(h))
        else:
            h = gelu_ext.geglu(self.gate(h), self.up(h), "sigmoid")
        return x + self.down(h)


def model(dim=32, hidden=128):
    torch.manual_seed(0)
    return nn.Sequential(*(FeedForward(dim, hidden, a) for a in ("gelu", "bias_gelu", "geglu")),
                         nn.LayerNorm(dim), nn.Linear(dim, 1))


def tensor_parallel(model, mesh):
    """Each block's up (and gate) by columns, its down by rows; BiasGELU's bias by its
    elements, like the columns of up. use_local_output=False keeps up's output a DTensor, which
    the activation takes as it is."""
    for block in model[:-2]:
        plan = {"up": ColwiseParallel(use_local_output=False), "down": RowwiseParallel()}
        if block.activation == "geglu":
            plan["gate"] = ColwiseParallel(use_local_output=False)
        parallelize_module(block, mesh, plan)
        if block.activation == "bias_gelu":
            distribute_module(block.bias_gelu, mesh, shard_bias)
    return model


def shard_bias(name, module, mesh):
    module.bias = nn.Parameter(distribute_tensor(module.bias, mesh, [Shard(0)]))


def data(steps, batch=64, dim=32):
    """Batches of a regression task that needs the non-linearity, the same in every process."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(steps, batch, dim, generator=g)
    w = torch.randn(2, dim, generator=g) / dim ** 0.5
    y = (x @ w[0]).sin() * (x @ w[1])
    return x, y.unsqueeze(-1)


def train(model, steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for x, y in zip(*data(steps)):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def worker(steps):
    """What each process does once the process group is up: train the parallel model and, for
    comparison, the same model in this process alone. Returns both loss curves."""
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    single = model()
    parallel = tensor_parallel(copy.deepcopy(single), mesh)
    return train(parallel, steps), train(single, steps)


def report(parallel, single):
    difference = max(abs(p - s) for p, s in zip(parallel, single))
    every = max(1, len(parallel) // 6)
    print("| step | loss, 2 processes | loss, 1 process |\n|---|---|---|")
    for step in [*range(0, len(parallel), every), len(parallel) - 1]:
        print(f"| {step + 1} | {parallel[step]:.6f} | {single[step]:.6f} |")
    print(f"largest difference between the loss curves: {difference:.2g}")
    if difference <= 1e-4 * max(single):
        print("tensor parallel training matches one process to float32 rounding")
    else:
        raise SystemExit("tensor parallel training does not match one process")


def _spawned(rank, steps, init_file):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # this example talks over loopback only
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    parallel, single = worker(steps)
    if rank == 0:
        report(parallel, single)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    if "RANK" in os.environ:  # started by torchrun
        dist.init_process_group("gloo")
        parallel, single = worker(args.steps)
        if dist.get_rank() == 0:
            report(parallel, single)
        dist.destroy_process_group()
        return
    with tempfile.TemporaryDirectory() as directory:
        torch.multiprocessing.spawn(_spawned, args=(args.steps, os.path.join(directory, "init")),
                                    nprocs=WORLD_SIZE)


if __name__ == "__main__":
    main()
