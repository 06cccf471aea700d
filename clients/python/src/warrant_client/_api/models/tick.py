from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.tick_state import TickState
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Tick")



@_attrs_define
class Tick:
    """ What became of one tick.

        Attributes:
            at_ms (int): The tick's time (ms since the epoch).
            schedule (str): The schedule.
            state (TickState): Where a tick stands.
            note (None | str | Unset): Why it was skipped or failed.
            run_id (None | str | Unset): The run it started (the id chosen when the tick was claimed).
     """

    at_ms: int
    schedule: str
    state: TickState
    note: None | str | Unset = UNSET
    run_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at_ms = self.at_ms

        schedule = self.schedule

        state = self.state.value

        note: None | str | Unset
        if isinstance(self.note, Unset):
            note = UNSET
        else:
            note = self.note

        run_id: None | str | Unset
        if isinstance(self.run_id, Unset):
            run_id = UNSET
        else:
            run_id = self.run_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at_ms": at_ms,
            "schedule": schedule,
            "state": state,
        })
        if note is not UNSET:
            field_dict["note"] = note
        if run_id is not UNSET:
            field_dict["run_id"] = run_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at_ms = d.pop("at_ms")

        schedule = d.pop("schedule")

        state = TickState(d.pop("state"))




        def _parse_note(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        note = _parse_note(d.pop("note", UNSET))


        def _parse_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        run_id = _parse_run_id(d.pop("run_id", UNSET))


        tick = cls(
            at_ms=at_ms,
            schedule=schedule,
            state=state,
            note=note,
            run_id=run_id,
        )


        tick.additional_properties = d
        return tick

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
