"""How a call reaches an op: `route`, the one routing function of the public functions
(functional.py) and of the derivatives computed here, and the autograd.Functions it may choose.

  under torch.compile            the op itself;
  under torch.func transforms    the op's autograd.Function in the setup_context style;
  autograd records the call,     the op's autograd.Function in the classic style;
  or forward AD is active
  otherwise                      the op below its registered autograd.

Why:
- torch.library gives custom ops reverse-mode autograd (ops.py, register_autograd) but has no
  hook for forward-mode AD: through the op alone, dual tensors and torch.func.jvp find no
  tangent formula. So differentiable eager calls go through autograd.Functions with a `jvp`, one
  per op (the backward ops too, for the next order), which call the same op and compute its
  derivatives with the formulas of _derivatives.py, routing their own op calls the same way.
- Dynamo does not trace an autograd.Function with a custom jvp (it breaks the graph), so under
  torch.compile a call takes the op itself, which AOTAutograd differentiates through the op's
  registered autograd.
- The registered autograd is a Python kernel at the Autograd dispatch key, which on every call
  checks whether a graph is needed and otherwise redispatches: on tensors of a few thousand
  elements this check costs as much as the kernel. Eager calls that record nothing (inference; a
  backward pass without create_graph) run the op below it.
What would let the routes go: forward-mode formulas registered with a custom op (as
derivatives.yaml gives them to ATen's ops), which would make the autograd.Functions redundant;
and an autograd kernel that stays in C++ where no graph is needed, which would make the route
below autograd redundant. Then every call could take the op.
"""

import functools
import types

import torch
import torch.autograd.forward_ad as forward_ad

from ._derivatives import DERIVATIVES, refuse_third_order

_ops = torch.ops.gelu_ext
_OPS = {name: getattr(_ops, name).default for name in DERIVATIVES}


def _forward_ad_active():
    return forward_ad._current_level >= 0


def _differentiable(tensors):
    """Whether autograd records a call on these tensors (grad mode on, which it is not in a
    backward pass without create_graph, and one of them requiring grad) or forward AD is
    active."""
    return ((torch.is_grad_enabled() and any(t.requires_grad for t in tensors))
            or _forward_ad_active())


def below_autograd(op, *args):
    """op(*args) without its registered autograd kernel (what that kernel itself does where no
    graph is needed)."""
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args)


def route(name, *args):
    """The op `name` (torch.ops.gelu_ext.<name>) on args, its tensors then approximate, by the
    route the call needs (module docstring)."""
    op = _OPS[name]
    if torch.compiler.is_compiling():
        return op(*args)
    if torch._C._are_functorch_transforms_active():
        return _FUNCTIONS_FOR_TRANSFORMS[name].apply(*args)
    if _differentiable(args[:-1]):
        return _FUNCTIONS[name].apply(*args)
    return below_autograd(op, *args)


# The ops as the derivative formulas call them from the autograd.Functions: routed.
_ROUTED = types.SimpleNamespace(**{name: functools.partial(route, name) for name in DERIVATIVES})


def _autograd_functions(name):
    """The autograd.Functions of the op `name`, for eager autograd and forward AD, and for the
    torch.func transforms: the op below autograd, its derivatives from _derivatives.py. The
    transforms need the setup_context style (vmap: the op's own vmap rule, through
    generate_vmap_rule); eager calls take the classic style, since the other binds the
    arguments to forward's signature with inspect on every apply: a forward with grad on 1000
    elements took 27-39 µs against 8, forward and backward 112-118 against 60-69 (torch 2.14).
    Otherwise the two are one."""
    op = _OPS[name]
    vjp, jvp = DERIVATIVES[name]
    keeps_inputs = vjp is not refuse_third_order

    def save_inputs(ctx, inputs):
        *tensors, ctx.approximate = inputs
        if keeps_inputs:
            ctx.save_for_backward(*tensors)
            if _forward_ad_active():  # only a jvp needs these (saving them: 1 µs of 8)
                ctx.save_for_forward(*tensors)

    def forward(*args):
        return below_autograd(op, *args)

    def forward_saving_inputs(ctx, *args):
        save_inputs(ctx, args)
        return below_autograd(op, *args)

    def backward(ctx, *grads):
        return (*vjp(_ROUTED, ctx.approximate, ctx.saved_tensors, *grads), None)

    def jvp_of_inputs(ctx, *tangents):  # the last tangent is approximate's, None
        return jvp(_ROUTED, ctx.approximate, ctx.saved_tensors, *tangents[:-1])

    derivatives = dict(backward=staticmethod(backward), jvp=staticmethod(jvp_of_inputs))
    eager = type(name, (torch.autograd.Function,),
                 dict(derivatives, forward=staticmethod(forward_saving_inputs)))
    under_transforms = type(f"{name}_under_torch_func", (torch.autograd.Function,), dict(
        derivatives, forward=staticmethod(forward), generate_vmap_rule=True,
        setup_context=staticmethod(lambda ctx, inputs, output: save_inputs(ctx, inputs))))
    return eager, under_transforms


_FUNCTIONS, _FUNCTIONS_FOR_TRANSFORMS = {}, {}
for _name in DERIVATIVES:
    _FUNCTIONS[_name], _FUNCTIONS_FOR_TRANSFORMS[_name] = _autograd_functions(_name)
