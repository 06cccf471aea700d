from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
from typing import Literal, cast

if TYPE_CHECKING:
  from ..models.missing import Missing





T = TypeVar("T", bound="OutcomeType1")



@_attrs_define
class OutcomeType1:
    """ The run ended with requirements missing.

        Attributes:
            missing (list[Missing]): Each missing requirement with its attributed cause.
            outcome (Literal['not_attained']):
     """

    missing: list[Missing]
    outcome: Literal['not_attained']
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.missing import Missing # noqa: PLC0415
        missing = []
        for missing_item_data in self.missing:
            missing_item = missing_item_data.to_dict()
            missing.append(missing_item)



        outcome = self.outcome


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "missing": missing,
            "outcome": outcome,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.missing import Missing # noqa: PLC0415
        d = dict(src_dict)
        missing = []
        _missing = d.pop("missing")
        for missing_item_data in (_missing):
            missing_item = Missing.from_dict(missing_item_data)



            missing.append(missing_item)


        outcome = cast(Literal['not_attained'] , d.pop("outcome"))
        if outcome != 'not_attained':
            raise ValueError(f"outcome must match const 'not_attained', got '{outcome}'")

        outcome_type_1 = cls(
            missing=missing,
            outcome=outcome,
        )


        outcome_type_1.additional_properties = d
        return outcome_type_1

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
