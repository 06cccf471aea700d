from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="Spent")



@_attrs_define
class Spent:
    """ What a run spent, as a child reports it to its parent.

        Attributes:
            calls (int): Tool calls started.
            cost_micro_usd (int): Cost the decider reported, in micro-dollars.
            decisions (int): Decisions taken.
            tokens (int): Tokens the decider reported.
     """

    calls: int
    cost_micro_usd: int
    decisions: int
    tokens: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        calls = self.calls

        cost_micro_usd = self.cost_micro_usd

        decisions = self.decisions

        tokens = self.tokens


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "calls": calls,
            "cost_micro_usd": cost_micro_usd,
            "decisions": decisions,
            "tokens": tokens,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        calls = d.pop("calls")

        cost_micro_usd = d.pop("cost_micro_usd")

        decisions = d.pop("decisions")

        tokens = d.pop("tokens")

        spent = cls(
            calls=calls,
            cost_micro_usd=cost_micro_usd,
            decisions=decisions,
            tokens=tokens,
        )


        spent.additional_properties = d
        return spent

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
