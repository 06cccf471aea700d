from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.fault import Fault





T = TypeVar("T", bound="RequirementReport")



@_attrs_define
class RequirementReport:
    """ One terminal requirement.

        Attributes:
            requirement (str): `commit` or `attained`.
            satisfied (bool): Met, judged from evidence.
            step (str): Identifies a step within a spec.
            fault (Fault | None | Unset): Why not.
            waiting (None | str | Unset): While the run goes on, why a requirement is not met yet instead of a fault: its
                step
                waits for a person's `approval`, or a `reconciliation`, or is `running` or `not
                started`. Nothing failed.
     """

    requirement: str
    satisfied: bool
    step: str
    fault: Fault | None | Unset = UNSET
    waiting: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.fault import Fault # noqa: PLC0415
        requirement = self.requirement

        satisfied = self.satisfied

        step = self.step

        fault: dict[str, Any] | None | Unset
        if isinstance(self.fault, Unset):
            fault = UNSET
        elif isinstance(self.fault, Fault):
            fault = self.fault.to_dict()
        else:
            fault = self.fault

        waiting: None | str | Unset
        if isinstance(self.waiting, Unset):
            waiting = UNSET
        else:
            waiting = self.waiting


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "requirement": requirement,
            "satisfied": satisfied,
            "step": step,
        })
        if fault is not UNSET:
            field_dict["fault"] = fault
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fault import Fault # noqa: PLC0415
        d = dict(src_dict)
        requirement = d.pop("requirement")

        satisfied = d.pop("satisfied")

        step = d.pop("step")

        def _parse_fault(data: object) -> Fault | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                fault_type_0 = Fault.from_dict(data)



                return fault_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Fault | None | Unset, data)

        fault = _parse_fault(d.pop("fault", UNSET))


        def _parse_waiting(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        waiting = _parse_waiting(d.pop("waiting", UNSET))


        requirement_report = cls(
            requirement=requirement,
            satisfied=satisfied,
            step=step,
            fault=fault,
            waiting=waiting,
        )


        requirement_report.additional_properties = d
        return requirement_report

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
