"""Background workers yield the CPU to decoding: real Celery worker processes, their scheduling priority read
from the kernel for every thread."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.services]


def niceness(pid: int) -> set[int]:
    """The nice value of each thread of the process (field 19 of /proc/<pid>/task/<tid>/stat)."""
    values = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        values.add(int(stat[stat.rindex(")") + 2 :].split()[16]))
    return values


def test_a_worker_of_background_queues_runs_nicer_and_one_that_decodes_does_not(start_worker):
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    env = {"BACKGROUND_WORKER_NICE": "10"}
    background = start_worker("demonstrations,experiments", pool="threads", concurrency=2, env=env)
    decoding = start_worker("interactive,demonstrations", pool="threads", concurrency=2, env=env)
    assert niceness(background.proc.pid) == {min(mine + 10, 19)}
    assert niceness(decoding.proc.pid) == {mine}


def test_zero_leaves_a_background_worker_at_the_priority_it_was_started_with(start_worker):
    worker = start_worker("training", env={"BACKGROUND_WORKER_NICE": "0"})
    assert niceness(worker.proc.pid) == {os.getpriority(os.PRIO_PROCESS, 0)}
