from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.new_grant_args import NewGrantArgs





T = TypeVar("T", bound="NewGrant")



@_attrs_define
class NewGrant:
    """ `POST /v1/grants` body: a standing grant for the caller's tenant.

        Attributes:
            provider (str): The provider.
            tool (str): The tool.
            args (NewGrantArgs | Unset): Argument (top-level name) to constraint: `one_of` (a single value: equal to),
                `min`,
                `max`, `from` (`objective`, `input`, `carried`, `trusted_output`, `decider`).
            expires_at_ms (int | None | Unset): Until when (ms since the epoch; absent: until revoked).
            note (str | Unset): Why it is given. Default: ''.
            user (None | str | Unset): The user whose runs it covers (absent: every user of the tenant).
     """

    provider: str
    tool: str
    args: NewGrantArgs | Unset = UNSET
    expires_at_ms: int | None | Unset = UNSET
    note: str | Unset = ''
    user: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.new_grant_args import NewGrantArgs # noqa: PLC0415
        provider = self.provider

        tool = self.tool

        args: dict[str, Any] | Unset = UNSET
        if not isinstance(self.args, Unset):
            args = self.args.to_dict()

        expires_at_ms: int | None | Unset
        if isinstance(self.expires_at_ms, Unset):
            expires_at_ms = UNSET
        else:
            expires_at_ms = self.expires_at_ms

        note = self.note

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "provider": provider,
            "tool": tool,
        })
        if args is not UNSET:
            field_dict["args"] = args
        if expires_at_ms is not UNSET:
            field_dict["expires_at_ms"] = expires_at_ms
        if note is not UNSET:
            field_dict["note"] = note
        if user is not UNSET:
            field_dict["user"] = user

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.new_grant_args import NewGrantArgs # noqa: PLC0415
        d = dict(src_dict)
        provider = d.pop("provider")

        tool = d.pop("tool")

        _args = d.pop("args", UNSET)
        args: NewGrantArgs | Unset
        if isinstance(_args,  Unset):
            args = UNSET
        else:
            args = NewGrantArgs.from_dict(_args)




        def _parse_expires_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expires_at_ms = _parse_expires_at_ms(d.pop("expires_at_ms", UNSET))


        note = d.pop("note", UNSET)

        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))


        new_grant = cls(
            provider=provider,
            tool=tool,
            args=args,
            expires_at_ms=expires_at_ms,
            note=note,
            user=user,
        )

        return new_grant

