"""Any shape and layout: the same values as on contiguous data, and the output layout of F.gelu
(TensorIterator's), for the forward and both backward ops."""

import pytest
import torch
import torch.nn.functional as F
from conftest import FLOAT_DTYPES

import gelu_ext

ops = torch.ops.gelu_ext


def layouts(device, dtype):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return (torch.randn(*shape, generator=g) * 3).to(dtype).to(device)

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
    # Same values, bit for bit, as on a contiguous copy.
    assert torch.equal(y, gelu_ext.gelu(x.contiguous(), approximate).view(y.shape))


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_backward_layouts(device, approximate, layout):
    x = layouts(device, torch.float32)[layout]
    # grad with its own, different layout: contiguous; x's layout decides where they differ.
    grad = torch.randn(x.shape, device=device)
    dx = ops.gelu_backward(grad, x, approximate)
    assert dx.stride() == expected_strides(grad, x)
    assert torch.equal(dx, ops.gelu_backward(grad.contiguous(), x.contiguous(), approximate))
    gg = torch.randn(x.shape, device=device)
    ggrad, gx = ops.gelu_double_backward(gg, grad, x, approximate)
    assert ggrad.stride() == gx.stride() == expected_strides(gg, grad, x)
    ggrad_c, gx_c = ops.gelu_double_backward(gg, grad, x.contiguous(), approximate)
    assert torch.equal(ggrad, ggrad_c) and torch.equal(gx, gx_c)


def test_large_tensor_is_parallel_and_correct(device):
    # Several CPU threads' worth of elements, and a length that is no multiple of any vector width.
    x = torch.randn(3 * (1 << 18) + 7, device=device)
    y = gelu_ext.gelu(x)
    assert torch.equal(y[::1000], gelu_ext.gelu(x[::1000].contiguous()))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_results_do_not_depend_on_neighbours(device, approximate, dtype):
    # Inputs that a fast path cannot take (large, inf, NaN) next to ones that it can: each element
    # must come out as it does alone, whichever path its neighbours take.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, generator=g, dtype=torch.float64) * 2
    special = torch.tensor([30.0, -9.0, float("inf"), float("nan"), -1e4, 8.5], dtype=torch.float64)
    x[torch.randperm(512, generator=g)[:150]] = special.repeat(25)
    x = x.to(dtype).to(device)
    grad = torch.randn(512, generator=g).to(dtype).to(device)
    y, dx = gelu_ext.gelu(x, approximate), ops.gelu_backward(grad, x, approximate)
    for i in range(len(x)):
        alone = gelu_ext.gelu(x[i:i + 1], approximate)
        assert torch.equal(y[i:i + 1], alone) or (y[i].isnan() and alone.isnan().all()), i
        alone = ops.gelu_backward(grad[i:i + 1], x[i:i + 1], approximate)
        assert torch.equal(dx[i:i + 1], alone) or (dx[i].isnan() and alone.isnan().all()), i
