"""The checks that tests/test_distributed.py runs in 2 processes at once (gloo, on loopback): each
process runs every check, and writes what each found (the largest absolute differences against
one process, or the error) to a JSON file.

    python tests/distributed_checks.py     runs them and prints each check's differences

Each check compares gelu_ext on DTensors, or in a model under tensor parallelism, FSDP2 or DDP,
with the same computation on whole tensors in one process, in float64 (the example: float32), so
that what remains is the rounding of sums taken in another order (matrix products, gradient
reductions).
"""

import copy
import importlib.util
import itertools
import json
import os
import sys
import tempfile
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

import gelu_ext

# In the 2 processes this module is the first to import gelu_ext, which must not import DTensor
# (a cost of half a second) but must register its strategies once DTensor is imported.
DTENSOR_IMPORTED_WITH_GELU_EXT = "torch.distributed.tensor" in sys.modules
WORLD_SIZE = 2
APPROXIMATIONS = ("none", "tanh", "sigmoid")
CHECKS = {}  # name -> check(mesh) -> {what: largest absolute difference}


def check(name):
    def register(function):
        CHECKS[name] = function
        return function
    return register


class Skip(Exception):
    """A check that this torch cannot run, with the reason."""


def require_dtensor_sharding():
    try:
        from torch.distributed.tensor.experimental import register_sharding  # noqa: F401
    except ImportError as e:
        raise Skip(f"this torch cannot register DTensor sharding strategies: {e}") from None


def max_difference(got, expected, what, rtol=1e-12, atol=1e-13):
    """The largest |got - expected|, after checking got against expected; got may be a DTensor
    (compared as a whole)."""
    from torch.distributed.tensor import DTensor
    if isinstance(got, DTensor):
        got = got.full_tensor()
    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")
    return (got - expected).abs().max().item() if got.numel() else 0.0


def random(*shape, seed):
    """The same tensor in every process."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@check("strategies registered once DTensor is imported")
def strategies_registered_on_import(mesh):
    assert not DTENSOR_IMPORTED_WITH_GELU_EXT, "import gelu_ext imported torch.distributed.tensor"
    require_dtensor_sharding()
    from torch.distributed.tensor import DTensor
    registered = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs
    missing = [name for name in ("gelu", "gelu_backward", "gelu_double_backward", "bias_gelu",
                                 "bias_gelu_backward", "geglu", "geglu_backward", "geglu_packed",
                                 "geglu_packed_backward")
               if getattr(torch.ops.gelu_ext, name).default not in registered]
    assert not missing, f"no sharding strategy for {missing}"
    return {}


# ---------------------------------------------------------------------------------------------
# The ops on DTensors of each placement: the output's placements by the rules of
# gelu_ext/_sharding.py, and values equal to the op's on whole tensors.

def _distribute(t, placement, mesh):
    """t as a DTensor of that placement; a Partial one holds t / 2 in each process (exact)."""
    from torch.distributed.tensor import DTensor, Partial, distribute_tensor
    if isinstance(placement, Partial):
        return DTensor.from_local(t / WORLD_SIZE, mesh, [placement], run_check=False)
    return distribute_tensor(t, mesh, [placement])


def _check_op(mesh, op, operands, placements, expected_placements, what, rtol=0, atol=0):
    """op on DTensors of operands (whole tensors) with placements, against op on the operands;
    expected_placements: each output's placement, or None where any but Partial will do, or
    "any"."""
    from torch.distributed.tensor import Partial
    inputs = [_distribute(t, p, mesh) for t, p in zip(operands, placements)]
    got, expected = op(*inputs), op(*operands)
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    differences = {}
    for i, (g, e, placement) in enumerate(zip(got, expected, expected_placements)):
        if placement == "any":
            pass
        elif placement is None:
            assert not any(isinstance(p, Partial) for p in g.placements), (what, g.placements)
        else:
            assert tuple(g.placements) == (placement,), (what, i, g.placements, placement)
        differences[f"{what} output {i}"] = max_difference(g, e, f"{what} output {i}",
                                                           rtol=rtol, atol=atol)
    return differences


@check("placements of every op")
def placements_of_every_op(mesh):
    require_dtensor_sharding()
    from torch.distributed.tensor import Partial, Replicate, Shard
    ops = torch.ops.gelu_ext
    x, g, gg = random(6, 8, seed=0), random(6, 8, seed=1), random(6, 8, seed=2)
    b, h = random(8, seed=3), random(6, 16, seed=4)
    R, S0, S1, P = Replicate(), Shard(0), Shard(1), Partial()
    differences = {}
    # Each placement with every approximation, the default ("none") last: DTensor caches its
    # decision for a placement (which may redistribute the operands) and serves it to the next
    # call that matches the key, the approximation included or not.
    for p, a in itertools.product((R, S0, S1, P), ("tanh", "sigmoid", "none")):
        kept = None if p == P else p  # Partial operands are reduced first
        # bias_gelu: a bias sharded like a sharded last dimension, replicated otherwise;
        # grad_bias Partial where the rows are sharded (Partial operands: where they are
        # reduced to Shard(0)).
        bias_placement = S0 if p == S1 else R
        grad_bias = {R: R, S0: P, S1: S0, P: "any"}[p]
        # geglu_packed: h's last dimension [gate, up] is gathered, never computed per shard.
        packed = {R: R, S0: S0, S1: None, P: None}[p]
        cases = [
            ("gelu", lambda t: ops.gelu(t, a), [x], [p], [kept]),
            ("gelu_backward", lambda u, t: ops.gelu_backward(u, t, a), [g, x], [p] * 2, [kept]),
            ("gelu_double_backward", lambda v, u, t: ops.gelu_double_backward(v, u, t, a),
             [gg, g, x], [p] * 3, [kept] * 2),
            ("geglu", lambda u, t: ops.geglu(u, t, a), [x, g], [p] * 2, [kept]),
            ("geglu_backward", lambda v, u, t: ops.geglu_backward(v, u, t, a), [gg, x, g],
             [p] * 3, [kept] * 2),
            ("bias_gelu", lambda t, c: ops.bias_gelu(t, c, a), [x, b], [p, bias_placement],
             [kept]),
            ("bias_gelu_backward", lambda u, t, c: ops.bias_gelu_backward(u, t, c, a),
             [g, x, b], [p, p, bias_placement], [kept, grad_bias]),
            ("geglu_packed", lambda t: ops.geglu_packed(t, a), [h], [p], [packed]),
            ("geglu_packed_backward", lambda u, t: ops.geglu_packed_backward(u, t, a), [x, h],
             [p] * 2, [packed]),
        ]
        for name, op, operands, placements, expected in cases:
            # grad_bias sums rows, in another order where they are sharded.
            tolerance = dict(rtol=1e-14, atol=1e-14) if name == "bias_gelu_backward" else {}
            differences.update(_check_op(mesh, op, operands, placements, expected,
                                         f"{name} {p} {a}", **tolerance))
    return _largest_per_op(differences)


def _largest_per_op(differences):
    """The largest difference per op (the first word of each key)."""
    per_op = {}
    for key, value in differences.items():
        op = key.split()[0]
        per_op[op] = max(per_op.get(op, 0.0), value)
    return per_op


def _value_and_derivatives(f, inputs):
    """f(*inputs), the gradients of sum(f^2) for the inputs f uses, and those of the sum of
    their squares (second order)."""
    y = f(*inputs)
    first = torch.autograd.grad((y * y).sum(), inputs, create_graph=True, allow_unused=True)
    used = [(t, d) for t, d in zip(inputs, first) if d is not None]
    second = torch.autograd.grad(sum((d * d).sum() for _, d in used), [t for t, _ in used])
    return [y, *(d for _, d in used), *second]


@check("autograd on DTensors, first and second order")
def autograd_on_dtensors(mesh):
    require_dtensor_sharding()
    from torch.distributed.tensor import Replicate, Shard
    operands = random(6, 8, seed=5), random(8, seed=6), random(6, 16, seed=7)  # x, b, h
    forms = {  # the function of (x, b, h), and their placements
        "gelu": (lambda x, b, h: gelu_ext.gelu(x, "tanh"), [Shard(1), Replicate(), Shard(0)]),
        "bias_gelu": (lambda x, b, h: gelu_ext.bias_gelu(x, b), [Shard(1), Shard(0), Shard(0)]),
        "geglu": (lambda x, b, h: gelu_ext.geglu(x, x * 2), [Shard(0), Replicate(), Shard(0)]),
        "geglu_packed": (lambda x, b, h: gelu_ext.geglu_packed(h, "sigmoid"),
                         [Shard(0), Replicate(), Shard(0)]),
    }
    differences = {}
    for name, (f, placements) in forms.items():
        expected = _value_and_derivatives(f, [t.clone().requires_grad_() for t in operands])
        got = _value_and_derivatives(f, [_distribute(t, p, mesh).requires_grad_()
                                         for t, p in zip(operands, placements)])
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            differences[f"{name} {i}"] = max_difference(g, e, f"{name}: value or derivative {i}")
    return _largest_per_op(differences)


# ---------------------------------------------------------------------------------------------
# A Transformer MLP block under tensor parallelism, per form of the activation.

class MLP(nn.Module):
    """up projection, activation, down projection; `form` names the gelu_ext op."""

    def __init__(self, form, approximate, dim=8, hidden=16):
        super().__init__()
        self.form = form
        self.up = nn.Linear(dim, 2 * hidden if form == "geglu_packed" else hidden,
                            bias=form != "bias_gelu")
        if form == "geglu":
            self.gate = nn.Linear(dim, hidden)
        self.activation = {"gelu": lambda: gelu_ext.GELU(approximate),
                           "bias_gelu": lambda: gelu_ext.BiasGELU(hidden, approximate),
                           "geglu": lambda: None,
                           "geglu_packed": lambda: gelu_ext.GEGLU(approximate)}[form]()
        self.approximate = approximate
        self.down = nn.Linear(hidden, dim)
        with torch.no_grad():
            if form == "bias_gelu":
                self.activation.bias.normal_()

    def forward(self, x):
        if self.form == "geglu":
            return self.down(gelu_ext.geglu(self.gate(x), self.up(x), self.approximate))
        return self.down(self.activation(self.up(x)))


def tensor_parallel(block, mesh, sequence_parallel=False):
    """block parallelized as Megatron does: up (and gate) column-wise, down row-wise, the
    activation on the column shards (BiasGELU's bias sharded alike)."""
    from torch.distributed.tensor import Shard, distribute_module, distribute_tensor
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    layouts = dict(input_layouts=Shard(1)) if sequence_parallel else {}
    column = ColwiseParallel(use_local_output=False, **layouts)
    plan = {"up": column, "down": RowwiseParallel(
        **(dict(output_layouts=Shard(1)) if sequence_parallel else {}))}
    if block.form == "geglu":
        plan["gate"] = column
    parallelize_module(block, mesh, plan)
    if block.form == "bias_gelu":
        distribute_module(block.activation, mesh, lambda name, module, mesh: [
            module.register_parameter(n, nn.Parameter(distribute_tensor(p, mesh, [Shard(0)])))
            for n, p in list(module.named_parameters(recurse=False))])
    return block


def _compare_blocks(block, reference, x, sequence_parallel, what):
    """The forward output, loss and every gradient of block against reference's, which takes x,
    the whole batch; block takes x too, or under sequence parallelism this process's rows of it
    (and returns this process's rows of the output)."""
    mine = _rows_of if sequence_parallel else (lambda t: t)
    x_ref, x_local = x.clone().requires_grad_(), mine(x).clone().requires_grad_()
    y_ref, y = reference(x_ref), block(x_local)
    loss_ref = (y_ref ** 2).mean()
    loss = (y ** 2).sum() / y_ref.numel()  # under sequence parallelism, this process's share
    loss_ref.backward()
    loss.backward()
    loss = loss.detach().clone()
    if sequence_parallel:
        dist.all_reduce(loss)
    differences = {"output": max_difference(y, mine(y_ref), f"{what} output"),
                   "loss": max_difference(loss, loss_ref.detach(), f"{what} loss"),
                   "gradient": max_difference(x_local.grad, mine(x_ref.grad),
                                              f"{what} input gradient")}
    expected = dict(reference.named_parameters())
    for name, p in block.named_parameters():
        name = name.removeprefix("_orig_mod.")  # a compiled block's
        differences["gradient"] = max(differences["gradient"], max_difference(
            p.grad, expected[name].grad, f"{what} gradient of {name}"))
    return differences


def _rows_of(t):
    """This process's share of t's dimension 1 (the sequence), as Shard(1) gives it."""
    return t.tensor_split(WORLD_SIZE, dim=1)[dist.get_rank()]


def _tp_check(mesh, forms, approximations=APPROXIMATIONS, compile=False,
              sequence_parallel=False):
    require_dtensor_sharding()
    differences = {}
    for form in forms:
        for a in approximations:
            torch.manual_seed(0)
            reference = MLP(form, a).double()
            block = tensor_parallel(copy.deepcopy(reference), mesh, sequence_parallel)
            if compile:  # Dynamo and AOTAutograd, not Inductor's code generation: faster
                block = torch.compile(block, fullgraph=True, backend="aot_eager")
            x = random(4, 6, 8, seed=8)
            for key, value in _compare_blocks(block, reference, x, sequence_parallel,
                                              f"{form} {a}").items():
                differences[f"{form} {key}"] = max(differences.get(f"{form} {key}", 0.0), value)
    return differences


@check("tensor parallel MLP block")
def tensor_parallel_block(mesh):
    return _tp_check(mesh, ("gelu", "bias_gelu", "geglu", "geglu_packed"))


@check("sequence parallel MLP block")
def sequence_parallel_block(mesh):
    return _tp_check(mesh, ("gelu", "bias_gelu"), sequence_parallel=True)


# ---------------------------------------------------------------------------------------------
# Data parallel training steps after replace_gelu: FSDP2 and DDP against one process.

def _model():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU("tanh"),
                          nn.Linear(32, 4)).double()
    gelu_ext.replace_gelu(model)
    assert isinstance(model[1], gelu_ext.GELU) and isinstance(model[3], gelu_ext.GELU)
    return model


def _training_step(model, x, y):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _data_parallel_check(wrap):
    reference = _model()
    model = wrap(copy.deepcopy(reference))
    x, y = random(8, 8, seed=9), random(8, 4, seed=10)
    rows = slice(dist.get_rank() * 4, dist.get_rank() * 4 + 4)  # each process half the batch
    loss_ref = _training_step(reference, x, y)
    loss = _training_step(model, x[rows], y[rows])
    dist.all_reduce(loss)
    differences = {"loss": max_difference(loss / WORLD_SIZE, loss_ref, "loss"),
                   "parameters after one step": 0.0}
    for (name, p), (_, p_ref) in zip(model.named_parameters(), reference.named_parameters()):
        differences["parameters after one step"] = max(
            differences["parameters after one step"],
            max_difference(p.detach(), p_ref.detach(), f"parameter {name}"))
    return differences


@check("FSDP2 training step")
def fsdp2_training_step(mesh):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError as e:
            raise Skip(f"FSDP2 (fully_shard) is not in this torch: {e}") from None
    if not hasattr(torch.cpu.Stream, "record_event"):
        raise Skip("FSDP2 on the CPU needs CPU streams that record events (torch 2.6 has none)")

    def wrap(model):
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    return _data_parallel_check(wrap)


@check("DDP training step")
def ddp_training_step(mesh):
    return _data_parallel_check(nn.parallel.DistributedDataParallel)


@check("examples/tensor_parallel.py")
def tensor_parallel_example(mesh):
    # What each process of the example does, for a few steps (its own check: float32 rounding).
    require_dtensor_sharding()
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                        "tensor_parallel.py")
    spec = importlib.util.spec_from_file_location("tensor_parallel_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    parallel, single = example.worker(steps=8)
    difference = max(abs(p - s) for p, s in zip(parallel, single))
    assert difference <= 1e-4 * max(single), (parallel, single)
    return {"loss curve": difference}


# ---------------------------------------------------------------------------------------------
# The tensor parallel block under torch.compile.

@check("tensor parallel MLP block under torch.compile")
def compiled_tensor_parallel_block(mesh):
    torch._dynamo.reset()
    try:
        return _tp_check(mesh, ("gelu", "bias_gelu", "geglu", "geglu_packed"), ("tanh",),
                         compile=True)
    finally:
        torch._dynamo.reset()


# ---------------------------------------------------------------------------------------------

def run(rank, init_file, out_dir, names):
    """One process: the checks named (all if None), their results to out_dir/rank<rank>.json."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
    torch.set_num_threads(1)
    # A collective waits this long for the other process, which may be compiling on a loaded
    # machine: within test_distributed.py's bound on the whole run.
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=WORLD_SIZE, timeout=timedelta(seconds=240))
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    results = {}
    for name, function in CHECKS.items():
        if names is not None and name not in names:
            continue
        start = time.perf_counter()
        try:
            results[name] = {"differences": function(mesh)}
        except Skip as reason:
            results[name] = {"skip": str(reason)}
        except Exception:
            results[name] = {"error": traceback.format_exc()}
        results[name]["seconds"] = time.perf_counter() - start
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


def run_all(out_dir, timeout, names=None):
    """Both processes; their results, or an error naming what went wrong."""
    import torch.multiprocessing as mp
    init_file = os.path.join(out_dir, "init")
    context = mp.start_processes(run, args=(init_file, out_dir, names), nprocs=WORLD_SIZE,
                                 join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    try:
        while not context.join(timeout=max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the {WORLD_SIZE} processes took more than {timeout} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    results = []
    for rank in range(WORLD_SIZE):
        with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
            results.append(json.load(f))
    return results


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        start = time.perf_counter()
        results = run_all(directory, timeout=600, names=sys.argv[1:] or None)
        print(f"{WORLD_SIZE} processes, {time.perf_counter() - start:.1f} s in all")
    for name in results[0]:
        outcome = results[0][name]
        print(f"\n{name} ({outcome['seconds']:.1f} s)")
        for rank, result in enumerate(results):
            if "error" in result[name]:
                print(f"  rank {rank}: ERROR\n{result[name]['error']}")
            elif "skip" in result[name]:
                print(f"  rank {rank}: skipped: {result[name]['skip']}")
        for what, value in outcome.get("differences", {}).items():
            print(f"  {what:40s} {value:.3g}")
    sys.exit(any("error" in outcome for r in results for outcome in r.values()))
