from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.lineage import Lineage





T = TypeVar("T", bound="CarriedReport")



@_attrs_define
class CarriedReport:
    """ A carried value.

        Attributes:
            lineage (Lineage): Where a carried value came from.
            name (str): `step.output`.
            value (Any): The value.
     """

    lineage: Lineage
    name: str
    value: Any
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.lineage import Lineage # noqa: PLC0415
        lineage = self.lineage.to_dict()

        name = self.name

        value = self.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "lineage": lineage,
            "name": name,
            "value": value,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lineage import Lineage # noqa: PLC0415
        d = dict(src_dict)
        lineage = Lineage.from_dict(d.pop("lineage"))




        name = d.pop("name")

        value = d.pop("value")

        carried_report = cls(
            lineage=lineage,
            name=name,
            value=value,
        )


        carried_report.additional_properties = d
        return carried_report

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
