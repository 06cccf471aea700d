from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.event_type import EventType






T = TypeVar("T", bound="Event")



@_attrs_define
class Event:
    """ One record of a run's log (`warrant.events/1`): its sequence number, time and type, and the fields of that type
    (`warrant schema events` has them all).

        Attributes:
            at_ms (int): Milliseconds since the Unix epoch.
            seq (int): Gapless per-run sequence, from 1.
            type_ (EventType): What happened.
     """

    at_ms: int
    seq: int
    type_: EventType
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at_ms = self.at_ms

        seq = self.seq

        type_ = self.type_.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at_ms": at_ms,
            "seq": seq,
            "type": type_,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at_ms = d.pop("at_ms")

        seq = d.pop("seq")

        type_ = EventType(d.pop("type"))




        event = cls(
            at_ms=at_ms,
            seq=seq,
            type_=type_,
        )


        event.additional_properties = d
        return event

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
