from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.revoked import Revoked
  from ..models.standing_grant_args import StandingGrantArgs





T = TypeVar("T", bound="StandingGrant")



@_attrs_define
class StandingGrant:
    """ A standing grant.

        Attributes:
            by (str): Who gave it (`tenant/user`).
            created_at_ms (int): When (ms since the epoch).
            id (str): Its id (`g-...`), unique in the store.
            provider (str): The provider.
            tenant (str): The tenant whose runs it covers.
            tool (str): The tool.
            args (StandingGrantArgs | Unset): Argument (top-level name) to what its value must be: one of some values
                (`one_of`, a
                single value for "equal to"), a number within bounds (`min`, `max`), or from where it may
                come (`from`: `objective`, `input`, `carried`, `trusted_output`, `decider`). An argument
                it does not name may be anything.
            expires_at_ms (int | None | Unset): From this time on it covers nothing (ms since the epoch); absent: until
                revoked.
            note (str | Unset): Why it was given.
            revoked (None | Revoked | Unset): Revoked: by whom and when; it covers nothing since.
            user (None | str | Unset): The user whose runs it covers; absent: every user of the tenant.
     """

    by: str
    created_at_ms: int
    id: str
    provider: str
    tenant: str
    tool: str
    args: StandingGrantArgs | Unset = UNSET
    expires_at_ms: int | None | Unset = UNSET
    note: str | Unset = UNSET
    revoked: None | Revoked | Unset = UNSET
    user: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.revoked import Revoked # noqa: PLC0415
        from ..models.standing_grant_args import StandingGrantArgs # noqa: PLC0415
        by = self.by

        created_at_ms = self.created_at_ms

        id = self.id

        provider = self.provider

        tenant = self.tenant

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

        revoked: dict[str, Any] | None | Unset
        if isinstance(self.revoked, Unset):
            revoked = UNSET
        elif isinstance(self.revoked, Revoked):
            revoked = self.revoked.to_dict()
        else:
            revoked = self.revoked

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "by": by,
            "created_at_ms": created_at_ms,
            "id": id,
            "provider": provider,
            "tenant": tenant,
            "tool": tool,
        })
        if args is not UNSET:
            field_dict["args"] = args
        if expires_at_ms is not UNSET:
            field_dict["expires_at_ms"] = expires_at_ms
        if note is not UNSET:
            field_dict["note"] = note
        if revoked is not UNSET:
            field_dict["revoked"] = revoked
        if user is not UNSET:
            field_dict["user"] = user

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.revoked import Revoked # noqa: PLC0415
        from ..models.standing_grant_args import StandingGrantArgs # noqa: PLC0415
        d = dict(src_dict)
        by = d.pop("by")

        created_at_ms = d.pop("created_at_ms")

        id = d.pop("id")

        provider = d.pop("provider")

        tenant = d.pop("tenant")

        tool = d.pop("tool")

        _args = d.pop("args", UNSET)
        args: StandingGrantArgs | Unset
        if isinstance(_args,  Unset):
            args = UNSET
        else:
            args = StandingGrantArgs.from_dict(_args)




        def _parse_expires_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expires_at_ms = _parse_expires_at_ms(d.pop("expires_at_ms", UNSET))


        note = d.pop("note", UNSET)

        def _parse_revoked(data: object) -> None | Revoked | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                revoked_type_0 = Revoked.from_dict(data)



                return revoked_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Revoked | Unset, data)

        revoked = _parse_revoked(d.pop("revoked", UNSET))


        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))


        standing_grant = cls(
            by=by,
            created_at_ms=created_at_ms,
            id=id,
            provider=provider,
            tenant=tenant,
            tool=tool,
            args=args,
            expires_at_ms=expires_at_ms,
            note=note,
            revoked=revoked,
            user=user,
        )


        standing_grant.additional_properties = d
        return standing_grant

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
