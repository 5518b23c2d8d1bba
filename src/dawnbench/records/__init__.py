"""The documents a run leaves and every command reads, in one place below the harness and the engines that read
them: the run record and its physics (``record.py``), the MLPerf event log (``mllog.py``), and which runs count
(``selection.py``: the rule ``run``, ``analyze``, ``compare``, ``report`` and ``export`` share), and MLCommons'
compliance checker over a log (``compliance.py``, ``check-log``)."""
