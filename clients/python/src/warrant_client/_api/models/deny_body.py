from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="DenyBody")



@_attrs_define
class DenyBody:
    """ `POST /v1/approvals/{id}/deny` body.

        Attributes:
            args_digest (str): The digest of the arguments the person was shown.
            reason (str | Unset): Why. Default: ''.
     """

    args_digest: str
    reason: str | Unset = ''





    def to_dict(self) -> dict[str, Any]:
        args_digest = self.args_digest

        reason = self.reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "args_digest": args_digest,
        })
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        args_digest = d.pop("args_digest")

        reason = d.pop("reason", UNSET)

        deny_body = cls(
            args_digest=args_digest,
            reason=reason,
        )

        return deny_body

