from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import Literal, cast






T = TypeVar("T", bound="SourceType3")



@_attrs_define
class SourceType3:
    """ It appeared in an earlier result of this provider's call.

        Attributes:
            call (str):
            provider (str): The provider.
            source (Literal['provider_output']):
     """

    call: str
    provider: str
    source: Literal['provider_output']
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        call = self.call

        provider = self.provider

        source = self.source


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "call": call,
            "provider": provider,
            "source": source,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        call = d.pop("call")

        provider = d.pop("provider")

        source = cast(Literal['provider_output'] , d.pop("source"))
        if source != 'provider_output':
            raise ValueError(f"source must match const 'provider_output', got '{source}'")

        source_type_3 = cls(
            call=call,
            provider=provider,
            source=source,
        )


        source_type_3.additional_properties = d
        return source_type_3

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
