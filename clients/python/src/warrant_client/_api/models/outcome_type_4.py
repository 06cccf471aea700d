from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import Literal, cast






T = TypeVar("T", bound="OutcomeType4")



@_attrs_define
class OutcomeType4:
    """ A limit was reached.

        Attributes:
            limit (str): The limit's name, e.g. `decisions_max`.
            outcome (Literal['exhausted']):
            value (int): Its value.
     """

    limit: str
    outcome: Literal['exhausted']
    value: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        outcome = self.outcome

        value = self.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "limit": limit,
            "outcome": outcome,
            "value": value,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        limit = d.pop("limit")

        outcome = cast(Literal['exhausted'] , d.pop("outcome"))
        if outcome != 'exhausted':
            raise ValueError(f"outcome must match const 'exhausted', got '{outcome}'")

        value = d.pop("value")

        outcome_type_4 = cls(
            limit=limit,
            outcome=outcome,
            value=value,
        )


        outcome_type_4.additional_properties = d
        return outcome_type_4

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
