"""The protocol fixture (shared with packages/core-client/test/events.test.ts) parses; bad lines do not."""
from pathlib import Path

import pytest

from ftcore import events

FIXTURES = Path(__file__).parent / "fixtures"


def _lines(name: str) -> list[str]:
    return [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def test_every_valid_fixture_line_parses_and_every_kind_is_covered():
    parsed = [events.parse_event_line(line) for line in _lines("events.jsonl")]
    assert {e.event for e in parsed} == set(events.EVENT_TYPES)


@pytest.mark.parametrize("line", _lines("events.invalid.jsonl"))
def test_invalid_fixture_lines_are_rejected(line):
    with pytest.raises(ValueError):
        events.parse_event_line(line)


def test_emit_writes_one_json_line_that_parses_back(capsys):
    import io

    buffer = io.StringIO()
    events.set_output(buffer)
    try:
        events.emit(events.Progress(step=1, total_steps=2, epoch=0.5, loss=1.0, learning_rate=1e-3,
                                    tokens_per_second=10.0, eta_seconds=1.0))
    finally:
        import sys

        events.set_output(sys.stdout)
    (line,) = buffer.getvalue().splitlines()
    assert events.parse_event_line(line) == events.Progress(1, 2, 0.5, 1.0, 1e-3, 10.0, 1.0)


def test_a_broken_stdout_becomes_a_clean_stop(monkeypatch):
    """The worker died: writing an event fails. The core must not crash mid-step; it detaches and stops."""
    import io

    from ftcore import parent_watch

    class Closed(io.StringIO):
        def write(self, _text):
            raise BrokenPipeError(32, "Broken pipe")

    detached = []
    monkeypatch.setattr(parent_watch, "detach_from_parent", lambda: detached.append(True))
    try:
        events.set_output(Closed())
        events.emit(events.Log(level="info", message="nobody listens"))
        events.emit(events.Log(level="info", message="still nobody"))  # now goes to devnull
    finally:
        events.set_output(__import__("sys").stdout)
    assert detached == [True]
