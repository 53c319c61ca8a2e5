"""Any shape and layout: the same values as on contiguous data, and the output layout of F.gelu
(TensorIterator's), for the forward and both backward ops."""

import pytest
import torch
import torch.nn.functional as F
from conftest import FLOAT_DTYPES, assert_same_bits

import gelu_ext
from gelu_ext import reference

ops = torch.ops.gelu_ext


def layouts(device, dtype):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        """Random values, and among them +0, -0 and -50 (whose f is -0), so that comparisons
        see the sign of zero results."""
        values = torch.randn(*shape, generator=g) * 3
        flat = values.view(-1)
        flat[3::7], flat[5::11], flat[2::13] = 0.0, -0.0, -50.0
        return values.to(dtype).to(device)

    return {
        "0-dim": randn(()),
        "empty": randn(0, 3),
        "empty-middle": randn(4, 0, 2),
        "one element": randn(1, 1, 1),
        "contiguous": randn(37, 53),
        "transposed": randn(53, 37).t(),
        "sliced with steps": randn(40, 60)[::3, 1::2],
        "permuted": randn(3, 4, 5, 6).permute(2, 0, 3, 1),
        "expanded (stride 0)": randn(7, 1).expand(7, 11),
        "expanded scalar": randn(()).expand(5, 5),
        "channels_last": randn(2, 8, 5, 7).to(memory_format=torch.channels_last),
        "channels_last_3d": randn(2, 4, 3, 5, 6).to(memory_format=torch.channels_last_3d),
        "storage offset": randn(1001)[1:],
        "many dims": randn(*([2] * 12)).transpose(0, 11),
    }


LAYOUT_NAMES = list(layouts("cpu", torch.float32))


def expected_strides(*tensors):
    # The layout F.gelu (forward, one input) or aten's binary/ternary ops give their outputs.
    if len(tensors) == 1:
        return F.gelu(tensors[0]).stride()
    if len(tensors) == 2:
        return torch.ops.aten.gelu_backward(*tensors).stride()
    return torch.addcmul(*tensors).stride()


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_forward_layout(device, approximate, dtype, layout):
    x = layouts(device, dtype)[layout]
    y = gelu_ext.gelu(x, approximate)
    assert y.shape == x.shape and y.dtype == x.dtype and y.device == x.device
    assert y.stride() == expected_strides(x)
    # Same values, bit for bit (signs of zero included), as on a contiguous copy.
    assert_same_bits(y, gelu_ext.gelu(x.contiguous(), approximate).view(y.shape), layout)


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_backward_layouts(device, approximate, layout):
    x = layouts(device, torch.float32)[layout]
    # grad with its own, different layout: contiguous; x's layout decides where they differ.
    grad = torch.randn(x.shape, device=device)
    dx = ops.gelu_backward(grad, x, approximate)
    assert dx.stride() == expected_strides(grad, x)
    assert_same_bits(dx, ops.gelu_backward(grad.contiguous(), x.contiguous(), approximate),
                     f"backward, {layout}")
    gg = torch.randn(x.shape, device=device)
    ggrad, gx = ops.gelu_double_backward(gg, grad, x, approximate)
    assert ggrad.stride() == gx.stride() == expected_strides(gg, grad, x)
    ggrad_c, gx_c = ops.gelu_double_backward(gg, grad, x.contiguous(), approximate)
    assert_same_bits(ggrad, ggrad_c, f"double backward, {layout}")
    assert_same_bits(gx, gx_c, f"double backward, {layout}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_large_tensor_is_parallel_and_correct(device, dtype):
    # Several CPU threads' worth of elements, and a length that is no multiple of any vector
    # width: every element, the 7-element tail included, is what the op gives on pieces small
    # enough to take one thread (and, on a GPU, one round of the grid), signs of zero included.
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(3 * (1 << 18) + 7, generator=g) * 4).to(dtype)
    x[-7:] = torch.tensor([0.0, -0.0, -50.0, 1.5, -1.5, float("nan"), 3.0])
    y = gelu_ext.gelu(x.to(device)).cpu()
    pieces = torch.cat([gelu_ext.gelu(piece.to(device)).cpu() for piece in x.split(4096)])
    assert_same_bits(y, pieces, f"{dtype}, {len(x)} elements")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_results_do_not_depend_on_neighbours(device, approximate, dtype):
    # Inputs that a fast path cannot take (large, inf, NaN, zeros) next to ones that it can: each
    # element must come out as it does alone, whichever path its neighbours take.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, generator=g, dtype=torch.float64) * 2
    special = torch.tensor([30.0, -9.0, float("inf"), float("nan"), -1e4, 8.5, 0.0, -0.0],
                           dtype=torch.float64)
    x[torch.randperm(512, generator=g)[:200]] = special.repeat(25)
    x = x.to(dtype).to(device)
    grad = torch.randn(512, generator=g).to(dtype).to(device)
    y, dx = gelu_ext.gelu(x, approximate), ops.gelu_backward(grad, x, approximate)
    alone = torch.cat([gelu_ext.gelu(x[i:i + 1], approximate) for i in range(len(x))])
    assert_same_bits(y, alone, "forward")
    alone = torch.cat([ops.gelu_backward(grad[i:i + 1], x[i:i + 1], approximate)
                       for i in range(len(x))])
    assert_same_bits(dx, alone, "backward")


def jagged(device, dtype, lengths=(2, 5, 1), features=(6,), seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = [(torch.randn(n, *features, generator=g) * 3).to(dtype).to(device) for n in lengths]
    return torch.nested.nested_tensor(rows, layout=torch.jagged, requires_grad=True)


def test_jagged_nested_tensors(device, approximate):
    # Nested tensors of the jagged layout, as F.gelu takes them: the result keeps the sequence
    # structure, and values and gradients are those of the float64 reference at the packed values.
    x, bias = jagged(device, torch.float64), torch.randn(6, dtype=torch.float64, device=device)
    bias.requires_grad_()
    packed = x.values().detach()
    f, df, _ = reference.torch_reference(packed, approximate)
    fb, dfb, _ = reference.torch_reference(packed + bias.detach(), approximate)
    gate, up = packed.chunk(2, -1)
    fg, dfg, _ = reference.torch_reference(gate, approximate)
    cases = [(gelu_ext.gelu(x, approximate), f, df),
             (gelu_ext.bias_gelu(x, bias, approximate), fb, dfb),
             (gelu_ext.geglu(*x.chunk(2, -1), approximate), fg * up, None),
             (gelu_ext.geglu_packed(x, approximate), fg * up, None),
             (gelu_ext.GELU(approximate)(x), f, df)]
    for i, (y, expected, derivative) in enumerate(cases):
        assert y.is_nested and y.layout == torch.jagged and y.offsets() is x.offsets()
        torch.testing.assert_close(y.values(), expected, rtol=1e-14, atol=1e-300)
        if derivative is not None:
            grads = torch.autograd.grad(y.values().sum(), (x, bias), allow_unused=True)
            torch.testing.assert_close(grads[0].values(), derivative, rtol=1e-13, atol=1e-300)
            if i == 1:
                torch.testing.assert_close(grads[1], dfb.sum(0), rtol=1e-13, atol=1e-300)


def test_jagged_nested_tensor_errors(device):
    ragged_last = jagged(device, torch.float32, features=())  # (3, j): the ragged dimension last
    torch.testing.assert_close(gelu_ext.gelu(ragged_last).values(),
                               gelu_ext.gelu(ragged_last.values()), rtol=0, atol=0)
    with pytest.raises(ValueError, match="must not be its ragged one"):
        gelu_ext.bias_gelu(ragged_last, torch.zeros(1, device=device))
    x = jagged(device, torch.float32)
    with pytest.raises(ValueError, match="share their offsets"):
        gelu_ext.geglu(x, jagged(device, torch.float32, seed=1))
    with pytest.raises(TypeError, match="both be nested tensors or neither"):
        gelu_ext.geglu(x, torch.zeros(3, 6, device=device))
    strided = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)]).to(device)
    with pytest.raises(TypeError, match="layout=torch.jagged"):
        gelu_ext.gelu(strided)


def test_jagged_nested_tensor_under_compile():
    x = jagged("cpu", torch.float32).detach()
    compiled = torch.compile(lambda t: gelu_ext.gelu(t, "tanh"), fullgraph=True)
    torch.testing.assert_close(compiled(x).values(), gelu_ext.gelu(x.values(), "tanh"),
                               rtol=0, atol=0)
    torch._dynamo.reset()
