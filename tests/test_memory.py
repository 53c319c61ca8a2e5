"""Memory of the CPU outputs: where Linux grants transparent huge pages on request, a large new
output asks for them before the kernels write it (cpu::advise_huge_pages; 4 KB page faults cost
more than the GELU at these sizes on some machines), unless GELU_EXT_HUGE_PAGES=0."""

import os
import subprocess
import sys

import pytest

# Prints whether the memory of a large new gelu_ext output may take transparent huge pages (the
# "THPeligible" field of /proc/self/smaps for the mapping that holds its middle).
HUGE_PAGES_CHILD = r"""
import torch, gelu_ext
y = gelu_ext.gelu(torch.randn(1 << 23))  # a 32 MB output
middle = y.data_ptr() + y.numel() * y.element_size() // 2
eligible = None
with open("/proc/self/smaps") as smaps:
    inside = False
    for line in smaps:
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:
            start, end = (int(a, 16) for a in fields[0].split("-"))
            inside = start <= middle < end
        elif inside and fields[0] == "THPeligible:":
            eligible = int(fields[1])
print(eligible)
"""


def transparent_huge_pages_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return None


@pytest.mark.skipif(transparent_huge_pages_mode() != "madvise",
                    reason="needs Linux with transparent huge pages on request ('madvise' mode)")
@pytest.mark.parametrize("setting, eligible", [(None, "1"), ("0", "0")])
def test_large_outputs_ask_for_huge_pages(setting, eligible):
    env = {k: v for k, v in os.environ.items() if k != "GELU_EXT_HUGE_PAGES"}
    if setting is not None:
        env["GELU_EXT_HUGE_PAGES"] = setting
    result = subprocess.run([sys.executable, "-c", HUGE_PAGES_CHILD], env=env, check=True,
                            capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == eligible
