from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ApproveBody")



@_attrs_define
class ApproveBody:
    """ `POST /v1/approvals/{id}/approve` body.

        Attributes:
            args_digest (str): The digest of the arguments the approver was shown (`args_digest`): another is 409.
            args (Any | Unset): Approve these arguments instead of the ones shown (scope `once`): the call runs with
                them, validated and ruled on again, and the decider is shown both.
            scope (None | str | Unset): `once` (this call) or `run` (this action for the rest of the run).
            until_ms (int | None | Unset): Until when the approval holds (ms since the epoch).
     """

    args_digest: str
    args: Any | Unset = UNSET
    scope: None | str | Unset = UNSET
    until_ms: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        args_digest = self.args_digest

        args = self.args

        scope: None | str | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        else:
            scope = self.scope

        until_ms: int | None | Unset
        if isinstance(self.until_ms, Unset):
            until_ms = UNSET
        else:
            until_ms = self.until_ms


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "args_digest": args_digest,
        })
        if args is not UNSET:
            field_dict["args"] = args
        if scope is not UNSET:
            field_dict["scope"] = scope
        if until_ms is not UNSET:
            field_dict["until_ms"] = until_ms

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        args_digest = d.pop("args_digest")

        args = d.pop("args", UNSET)

        def _parse_scope(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))


        def _parse_until_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        until_ms = _parse_until_ms(d.pop("until_ms", UNSET))


        approve_body = cls(
            args_digest=args_digest,
            args=args,
            scope=scope,
            until_ms=until_ms,
        )

        return approve_body

