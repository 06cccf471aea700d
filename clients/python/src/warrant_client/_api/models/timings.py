from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Timings")



@_attrs_define
class Timings:
    """ Timings and counts.

        Attributes:
            calls (int): Calls started.
            decisions (int): Decisions taken.
            elapsed_ms (int): End (or last event) minus start, plus the time spent starting providers first.
            events (int): Events in the log.
            started_at_ms (int): Start, ms since the epoch.
            driving_ms (int | Unset): Of the elapsed time, the run's driving time (deciding, calling, starting providers):
                what `limits.deadline_ms` bounds. Default: 0.
            finished_at_ms (int | None | Unset): End, ms since the epoch.
            setup_ms (int | Unset): Of that, the time spent before the run (and each re-entry) started: starting and
                connecting to providers. Default: 0.
            waiting_ms (int | Unset): The time it waited for a person or an operator (approvals, reconciliations): bounded
                by `limits.wait_max_ms`, never by its deadline.
     """

    calls: int
    decisions: int
    elapsed_ms: int
    events: int
    started_at_ms: int
    driving_ms: int | Unset = 0
    finished_at_ms: int | None | Unset = UNSET
    setup_ms: int | Unset = 0
    waiting_ms: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        calls = self.calls

        decisions = self.decisions

        elapsed_ms = self.elapsed_ms

        events = self.events

        started_at_ms = self.started_at_ms

        driving_ms = self.driving_ms

        finished_at_ms: int | None | Unset
        if isinstance(self.finished_at_ms, Unset):
            finished_at_ms = UNSET
        else:
            finished_at_ms = self.finished_at_ms

        setup_ms = self.setup_ms

        waiting_ms = self.waiting_ms


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "calls": calls,
            "decisions": decisions,
            "elapsed_ms": elapsed_ms,
            "events": events,
            "started_at_ms": started_at_ms,
        })
        if driving_ms is not UNSET:
            field_dict["driving_ms"] = driving_ms
        if finished_at_ms is not UNSET:
            field_dict["finished_at_ms"] = finished_at_ms
        if setup_ms is not UNSET:
            field_dict["setup_ms"] = setup_ms
        if waiting_ms is not UNSET:
            field_dict["waiting_ms"] = waiting_ms

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        calls = d.pop("calls")

        decisions = d.pop("decisions")

        elapsed_ms = d.pop("elapsed_ms")

        events = d.pop("events")

        started_at_ms = d.pop("started_at_ms")

        driving_ms = d.pop("driving_ms", UNSET)

        def _parse_finished_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        finished_at_ms = _parse_finished_at_ms(d.pop("finished_at_ms", UNSET))


        setup_ms = d.pop("setup_ms", UNSET)

        waiting_ms = d.pop("waiting_ms", UNSET)

        timings = cls(
            calls=calls,
            decisions=decisions,
            elapsed_ms=elapsed_ms,
            events=events,
            started_at_ms=started_at_ms,
            driving_ms=driving_ms,
            finished_at_ms=finished_at_ms,
            setup_ms=setup_ms,
            waiting_ms=waiting_ms,
        )


        timings.additional_properties = d
        return timings

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
