"""The interrupt tests' event: FORKLIFT_INTERRUPT_AT sends SIGINT at a named point, as Ctrl-C would arrive there."""

from __future__ import annotations

import asyncio

import pytest

from forklift import errors
from forklift.errors import INTERRUPT_ENV, interrupt_point


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch):
    monkeypatch.setattr(errors, "_passes", errors.Counter())


def test_a_named_point_interrupts_on_its_first_pass_and_an_nth_on_that_pass(monkeypatch):
    monkeypatch.setenv(INTERRUPT_ENV, "first,second@2")
    interrupt_point("other")
    with pytest.raises(KeyboardInterrupt):
        interrupt_point("first")
    interrupt_point("first")  # once: the cleanup after an interrupt passes the point again
    interrupt_point("second")
    with pytest.raises(KeyboardInterrupt):
        interrupt_point("second")


def test_inside_asyncio_it_is_the_runners_ctrl_c_not_an_exception_in_a_task(monkeypatch):
    """asyncio.run handles SIGINT by cancelling its task: a coroutine that swallows the cancel would finish."""
    monkeypatch.setenv(INTERRUPT_ENV, "in-task")
    seen = []

    async def work() -> str:
        interrupt_point("in-task")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "finished"

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(work())
    assert seen == ["cancelled"]


def test_unset_it_does_nothing(monkeypatch):
    monkeypatch.delenv(INTERRUPT_ENV, raising=False)
    interrupt_point("anything")
