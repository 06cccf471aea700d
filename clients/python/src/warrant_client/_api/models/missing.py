from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.fault import Fault





T = TypeVar("T", bound="Missing")



@_attrs_define
class Missing:
    """ A terminal requirement that was not met.

        Attributes:
            fault (Fault): A structured error: what the decider is told and what the report attributes.
            requirement (str): `commit` (a `commit: required` step did not commit) or `attained`.
            step (str): Identifies a step within a spec.
     """

    fault: Fault
    requirement: str
    step: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.fault import Fault # noqa: PLC0415
        fault = self.fault.to_dict()

        requirement = self.requirement

        step = self.step


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "fault": fault,
            "requirement": requirement,
            "step": step,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fault import Fault # noqa: PLC0415
        d = dict(src_dict)
        fault = Fault.from_dict(d.pop("fault"))




        requirement = d.pop("requirement")

        step = d.pop("step")

        missing = cls(
            fault=fault,
            requirement=requirement,
            step=step,
        )


        missing.additional_properties = d
        return missing

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
