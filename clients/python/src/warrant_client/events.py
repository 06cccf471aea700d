"""Following a run's events over Server-Sent Events, resuming from `Last-Event-ID`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, Optional


@dataclass(frozen=True)
class Event:
    """One event of a run's log: its place (`seq`, from 1, no gaps), when (`at_ms`), what
    (`type`, e.g. `approval_requested`), and the whole record (`data`)."""

    seq: int
    type: str
    at_ms: int
    data: Dict[str, Any] = field(repr=False, hash=False, compare=False)

    @property
    def ends_run(self) -> bool:
        """The run's last event: nothing follows it."""
        return self.type == "run_finished"

    @staticmethod
    def parse(text: str) -> "Event":
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("an event is a JSON object")
        seq, kind, at = data.get("seq"), data.get("type"), data.get("at_ms")
        if not isinstance(seq, int) or not isinstance(kind, str):
            raise ValueError("an event has an integer `seq` and a string `type`")
        return Event(seq=seq, type=kind, at_ms=at if isinstance(at, int) else 0, data=data)


@dataclass
class Message:
    """One SSE message: its `id`, `event` name (`message` unless named) and `data`."""

    id: Optional[str] = None
    event: str = "message"
    data: str = ""


def messages(lines: Iterable[str]) -> Iterator[Message]:
    """The messages of an SSE stream, line by line (the format of the HTML standard's
    `text/event-stream`): `field: value` lines, a blank line ends a message, `:` lines are
    comments (the server's keep-alives)."""
    current = Message()
    data: list = []
    for line in lines:
        line = line.rstrip("\r\n")
        if line == "":
            if data:
                current.data = "\n".join(data)
                yield current
            current, data = Message(), []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "id":
            current.id = value
        elif name == "event":
            current.event = value
