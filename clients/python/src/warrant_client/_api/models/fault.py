from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.layer import Layer
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Fault")



@_attrs_define
class Fault:
    """ A structured error: what the decider is told and what the report attributes.

        Attributes:
            code (str): Stable code, e.g. `unknown_tool`, `invalid_arguments`, `provider_error`
                (`warrant explain` lists them).
            layer (Layer): Where a failure is attributed.
            message (str): For humans and deciders.
            inner (Fault | None | Unset): The fault inside this one: a child run's own attribution, when a delegating step
                failed because its child did.
     """

    code: str
    layer: Layer
    message: str
    inner: Fault | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code

        layer = self.layer.value

        message = self.message

        inner: dict[str, Any] | None | Unset
        if isinstance(self.inner, Unset):
            inner = UNSET
        elif isinstance(self.inner, Fault):
            inner = self.inner.to_dict()
        else:
            inner = self.inner


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "layer": layer,
            "message": message,
        })
        if inner is not UNSET:
            field_dict["inner"] = inner

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = d.pop("code")

        layer = Layer(d.pop("layer"))




        message = d.pop("message")

        def _parse_inner(data: object) -> Fault | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                inner_type_0 = Fault.from_dict(data)



                return inner_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Fault | None | Unset, data)

        inner = _parse_inner(d.pop("inner", UNSET))


        fault = cls(
            code=code,
            layer=layer,
            message=message,
            inner=inner,
        )


        fault.additional_properties = d
        return fault

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
