from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="UnsettledReport")



@_attrs_define
class UnsettledReport:
    """ A commit whose effect is not settled as happened.

        Attributes:
            args (Any): The arguments it was dispatched with.
            call (str):
            provider (str): The provider.
            state (str): `in_doubt` or `not_performed`.
            step (str): Identifies a step within a spec.
            tool (str): The tool.
            known (None | str | Unset): For a call in doubt: what is known.
            resent_by (None | str | Unset): For a call not performed: the call that sent it again, if one did.
     """

    args: Any
    call: str
    provider: str
    state: str
    step: str
    tool: str
    known: None | str | Unset = UNSET
    resent_by: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        args = self.args

        call = self.call

        provider = self.provider

        state = self.state

        step = self.step

        tool = self.tool

        known: None | str | Unset
        if isinstance(self.known, Unset):
            known = UNSET
        else:
            known = self.known

        resent_by: None | str | Unset
        if isinstance(self.resent_by, Unset):
            resent_by = UNSET
        else:
            resent_by = self.resent_by


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "args": args,
            "call": call,
            "provider": provider,
            "state": state,
            "step": step,
            "tool": tool,
        })
        if known is not UNSET:
            field_dict["known"] = known
        if resent_by is not UNSET:
            field_dict["resent_by"] = resent_by

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        args = d.pop("args")

        call = d.pop("call")

        provider = d.pop("provider")

        state = d.pop("state")

        step = d.pop("step")

        tool = d.pop("tool")

        def _parse_known(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        known = _parse_known(d.pop("known", UNSET))


        def _parse_resent_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        resent_by = _parse_resent_by(d.pop("resent_by", UNSET))


        unsettled_report = cls(
            args=args,
            call=call,
            provider=provider,
            state=state,
            step=step,
            tool=tool,
            known=known,
            resent_by=resent_by,
        )


        unsettled_report.additional_properties = d
        return unsettled_report

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
