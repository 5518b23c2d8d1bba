"""``dawnbench machine``: the hardware, its topology (cores, NUMA nodes, how the accelerators are
joined: SPEC §20), and the roofs every profile and every ``fraction_of_peak`` is held against —
measured now, in this process (SPEC §12, §14)."""

from __future__ import annotations

from typing import Any

import torch

from dawnbench import environment
from dawnbench.profiling.roofs import measure_roofs


def describe_machine(device: torch.device) -> dict[str, Any]:
    roofs = measure_roofs(device)
    hardware = environment.hardware_info(device)
    return {"hardware": hardware, "topology": hardware["topology"], "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "roofs": roofs.to_dict()}
