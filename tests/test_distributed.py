"""gelu_ext under torch.distributed, in 2 processes on the CPU (gloo, loopback): every op on
DTensors of each placement, a Transformer MLP block under tensor and sequence parallelism (also
under torch.compile), and FSDP2 and DDP training steps after replace_gelu, each against the same
computation in one process.

The processes start once and run every check of tests/distributed_checks.py; each test here
reads one check's outcome in both processes.
"""

import pytest
import torch.distributed as dist

import distributed_checks

pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with the gloo backend is not available in this torch build")

TIMEOUT_S = 300  # all checks together: 20-60 s on 2 shared cores


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return distributed_checks.run_all(str(tmp_path_factory.mktemp("distributed")), TIMEOUT_S)


@pytest.mark.parametrize("check", list(distributed_checks.CHECKS),
                         ids=lambda name: name.replace(" ", "_"))
def test_in_two_processes(outcomes, check):
    for rank, outcome in enumerate(outcomes):
        outcome = outcome[check]
        if "skip" in outcome:
            pytest.skip(outcome["skip"])
        assert "error" not in outcome, f"process {rank}:\n{outcome['error']}"
