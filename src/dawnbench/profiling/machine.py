"""``dawnbench machine``: the hardware, its topology (cores, NUMA nodes, how the accelerators are
joined: SPEC §20), and the roofs every profile and every ``fraction_of_peak`` is held against —
measured now, in this process."""

from __future__ import annotations

from typing import Any

import torch

from dawnbench import environment
from dawnbench.profiling.load import against_last, watched
from dawnbench.profiling.roofs import measure_roofs


def describe_machine(device: torch.device) -> dict[str, Any]:
    """The machine and its roofs, with the load while they were measured and how they compare with its last."""
    with watched("the roof probes") as load:
        roofs = measure_roofs(device).to_dict()
    hardware = environment.hardware_info(device)
    return {"hardware": hardware, "topology": hardware["topology"], "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "roofs": roofs, "load": load.summary,
            "notes": [*load.notes, *against_last(roofs, load)]}
