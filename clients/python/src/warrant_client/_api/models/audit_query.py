from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="AuditQuery")



@_attrs_define
class AuditQuery:
    """ `GET /v1/audit` parameters.

        Attributes:
            limit (int | None | Unset): Most actions listed (default 100, at most 1000), newest runs first.
            since (int | None | Unset): Only actions in runs started at or after this time (ms since the epoch).
     """

    limit: int | None | Unset = UNSET
    since: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        limit: int | None | Unset
        if isinstance(self.limit, Unset):
            limit = UNSET
        else:
            limit = self.limit

        since: int | None | Unset
        if isinstance(self.since, Unset):
            since = UNSET
        else:
            since = self.since


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if limit is not UNSET:
            field_dict["limit"] = limit
        if since is not UNSET:
            field_dict["since"] = since

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        limit = _parse_limit(d.pop("limit", UNSET))


        def _parse_since(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        since = _parse_since(d.pop("since", UNSET))


        audit_query = cls(
            limit=limit,
            since=since,
        )

        return audit_query

