"""dawnbench: time-to-accuracy benchmarking for deep-learning training.

The CLI (``dawnbench``) is a thin layer over this API::

    from dawnbench import run, get_task
    result = run("mnist")                       # default entry, seed 0
    print(result.status, result.time_to_accuracy_s)
"""

__version__ = "0.1.0"

from dawnbench.errors import DawnbenchError  # noqa: E402
from dawnbench.harness.runner import RunOptions, RunResult, run, run_many  # noqa: E402
from dawnbench.tasks import TASKS, Task, get_task  # noqa: E402

__all__ = [
    "DawnbenchError",
    "RunOptions",
    "RunResult",
    "TASKS",
    "Task",
    "get_task",
    "run",
    "run_many",
    "__version__",
]
