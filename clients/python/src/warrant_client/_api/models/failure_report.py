from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.layer import Layer
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FailureReport")



@_attrs_define
class FailureReport:
    """ One attributed failure.

        Attributes:
            code (str): Stable code.
            layer (Layer): Where a failure is attributed.
            message (str): For humans.
            call (None | str | Unset): The call.
            step (None | str | Unset): The step.
     """

    code: str
    layer: Layer
    message: str
    call: None | str | Unset = UNSET
    step: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code

        layer = self.layer.value

        message = self.message

        call: None | str | Unset
        if isinstance(self.call, Unset):
            call = UNSET
        else:
            call = self.call

        step: None | str | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "layer": layer,
            "message": message,
        })
        if call is not UNSET:
            field_dict["call"] = call
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = d.pop("code")

        layer = Layer(d.pop("layer"))




        message = d.pop("message")

        def _parse_call(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        call = _parse_call(d.pop("call", UNSET))


        def _parse_step(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        step = _parse_step(d.pop("step", UNSET))


        failure_report = cls(
            code=code,
            layer=layer,
            message=message,
            call=call,
            step=step,
        )


        failure_report.additional_properties = d
        return failure_report

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
