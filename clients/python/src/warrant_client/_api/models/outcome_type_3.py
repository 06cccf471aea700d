from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import Literal, cast






T = TypeVar("T", bound="OutcomeType3")



@_attrs_define
class OutcomeType3:
    """ Cancelled by an operator.

        Attributes:
            by (str): Who cancelled.
            outcome (Literal['cancelled']):
            reason (str): Why.
     """

    by: str
    outcome: Literal['cancelled']
    reason: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        by = self.by

        outcome = self.outcome

        reason = self.reason


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "by": by,
            "outcome": outcome,
            "reason": reason,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        by = d.pop("by")

        outcome = cast(Literal['cancelled'] , d.pop("outcome"))
        if outcome != 'cancelled':
            raise ValueError(f"outcome must match const 'cancelled', got '{outcome}'")

        reason = d.pop("reason")

        outcome_type_3 = cls(
            by=by,
            outcome=outcome,
            reason=reason,
        )


        outcome_type_3.additional_properties = d
        return outcome_type_3

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
