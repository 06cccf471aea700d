from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="DoubtRow")



@_attrs_define
class DoubtRow:
    """ A call in doubt, as an operator needs it to find out whether it happened.

        Attributes:
            call (str):
            provider (str): Its provider.
            tool (str): Its tool.
            args (Any | Unset): The arguments it was sent with.
            args_digest (None | str | Unset): Their digest.
            known (None | str | Unset): What is known of whether it reached the provider.
     """

    call: str
    provider: str
    tool: str
    args: Any | Unset = UNSET
    args_digest: None | str | Unset = UNSET
    known: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        call = self.call

        provider = self.provider

        tool = self.tool

        args = self.args

        args_digest: None | str | Unset
        if isinstance(self.args_digest, Unset):
            args_digest = UNSET
        else:
            args_digest = self.args_digest

        known: None | str | Unset
        if isinstance(self.known, Unset):
            known = UNSET
        else:
            known = self.known


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "call": call,
            "provider": provider,
            "tool": tool,
        })
        if args is not UNSET:
            field_dict["args"] = args
        if args_digest is not UNSET:
            field_dict["args_digest"] = args_digest
        if known is not UNSET:
            field_dict["known"] = known

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        call = d.pop("call")

        provider = d.pop("provider")

        tool = d.pop("tool")

        args = d.pop("args", UNSET)

        def _parse_args_digest(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        args_digest = _parse_args_digest(d.pop("args_digest", UNSET))


        def _parse_known(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        known = _parse_known(d.pop("known", UNSET))


        doubt_row = cls(
            call=call,
            provider=provider,
            tool=tool,
            args=args,
            args_digest=args_digest,
            known=known,
        )


        doubt_row.additional_properties = d
        return doubt_row

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
