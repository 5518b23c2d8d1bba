"""MLCommons' compliance checker on a run's ``events.log``: ``dawnbench check-log``.

    verdict = check_log(Path("runs/mnist-small-cnn-…-seed0"))
    verdict["valid"], verdict["messages"]

Runs the checker of PyPI ``mlperf-logging`` — its parser and its rule engine, nothing
re-implemented — with the rules of ``training_6.0.0/common.yaml`` only. Those rules
chain to benchmark-specific files (``open_common.yaml`` → ``open_<benchmark>.yaml``)
that do not exist for this project's tasks, so the chained files are not followed;
everything the common rules require is checked. Each message is the checker's own and
names the key (rule) that failed and, where it has one, the line. The log is then read as ``analyze`` and
``import-log`` read it (:mod:`dawnbench.records.mlperf`): a log their physics refuses fails here too, with their
message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.io import read_foreign
from dawnbench.records.mlperf import LogError, read_run

USAGE, RULESET = "training", "6.0.0"


def check_log(run_dir: Path) -> dict[str, Any]:
    """The checker's verdict on ``run_dir/events.log``: valid, and every message it gave."""
    from mlperf_logging.compliance_checker import mlp_compliance
    from mlperf_logging.compliance_checker.mlp_parser import parse_file

    run_dir = Path(run_dir)
    path = run_dir / "events.log" if run_dir.is_dir() else run_dir
    if not path.exists() and not path.is_symlink():
        raise DawnbenchError(f"{path}: no such event log. Pass a run directory made by `dawnbench run` "
                             "(it holds events.log) or the log file itself.")
    read_foreign(path, "event log")  # a regular file of a sane size, before the checker opens it
    try:
        loglines, errors = parse_file(str(path), ruleset=RULESET)
    except (ValueError, RecursionError, TypeError, KeyError) as err:  # lines the checker's parser chokes on
        return {"log": str(path), "ruleset": f"{USAGE} {RULESET} common.yaml", "valid": False,
                "messages": [f"the checker could not parse this log ({type(err).__name__}: {str(err)[:200]})"],
                "warnings": [], "lines": 0}
    checker = mlp_compliance.make_checker(USAGE, RULESET, quiet=False, werror=False)
    rules = Path(mlp_compliance.__file__).parent / f"{USAGE}_{RULESET}" / "common.yaml"
    try:
        if not loglines:
            checker.put_message("No log lines detected")
        checker.configured_checks(loglines, str(rules))
    finally:
        mlp_compliance.enqueued_configs.clear()  # the chained rule files, not followed (module-global)
    messages = [f"line {line!r} did not parse: {error}" for line, error in errors]
    messages += [*checker.overwritable.values(), *checker.not_overwritable]
    try:        # what `analyze` and `import-log` would say of the same log: one rulebook, whichever command reads it
        read_run(path)
    except LogError as err:
        at = f"line {err.problem.line}: " if err.problem.line else ""
        messages.append(f"dawnbench's reader (as analyze and import-log read it): {at}{err.problem.message}")
    return {"log": str(path), "ruleset": f"{USAGE} {RULESET} common.yaml", "valid": not messages,
            "messages": messages, "warnings": list(checker.warnings.values()), "lines": len(loglines)}
