from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
from typing import Literal, cast






T = TypeVar("T", bound="SourceType5")



@_attrs_define
class SourceType5:
    """ It holds a piece of an earlier result of this provider's call, or of its tool
    descriptions (no call): its letters and digits in another layout, a word of it, or a
    run of its text wrapped in more (provenance rules 3). Said in `also` of a value the
    decider produced: it keeps the decider's label (holding a trusted provider's text lends
    no trust), and a piece of an untrusted provider's text makes it untrusted.

        Attributes:
            provider (str): The provider.
            source (Literal['holds']):
            call (None | str | Unset): The call whose result held the piece (none: the provider's tool descriptions).
     """

    provider: str
    source: Literal['holds']
    call: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        provider = self.provider

        source = self.source

        call: None | str | Unset
        if isinstance(self.call, Unset):
            call = UNSET
        else:
            call = self.call


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "provider": provider,
            "source": source,
        })
        if call is not UNSET:
            field_dict["call"] = call

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        provider = d.pop("provider")

        source = cast(Literal['holds'] , d.pop("source"))
        if source != 'holds':
            raise ValueError(f"source must match const 'holds', got '{source}'")

        def _parse_call(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        call = _parse_call(d.pop("call", UNSET))


        source_type_5 = cls(
            provider=provider,
            source=source,
            call=call,
        )


        source_type_5.additional_properties = d
        return source_type_5

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
