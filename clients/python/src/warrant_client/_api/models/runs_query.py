from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RunsQuery")



@_attrs_define
class RunsQuery:
    """ `GET /v1/runs` filters.

        Attributes:
            cursor (None | str | Unset): The previous page's `next`.
            limit (int | None | Unset): Most runs on the page (default 50, at most 500).
            outcome (None | str | Unset): An outcome (`attained`, `not_attained`, `failed`, `cancelled`, `exhausted`).
            since (int | None | Unset): Runs started at or after this time (ms since the epoch).
            spec (None | str | Unset): A spec id.
            status (None | str | Unset): `running`, `interrupted`, `waiting`, `ready` or an outcome.
     """

    cursor: None | str | Unset = UNSET
    limit: int | None | Unset = UNSET
    outcome: None | str | Unset = UNSET
    since: int | None | Unset = UNSET
    spec: None | str | Unset = UNSET
    status: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        cursor: None | str | Unset
        if isinstance(self.cursor, Unset):
            cursor = UNSET
        else:
            cursor = self.cursor

        limit: int | None | Unset
        if isinstance(self.limit, Unset):
            limit = UNSET
        else:
            limit = self.limit

        outcome: None | str | Unset
        if isinstance(self.outcome, Unset):
            outcome = UNSET
        else:
            outcome = self.outcome

        since: int | None | Unset
        if isinstance(self.since, Unset):
            since = UNSET
        else:
            since = self.since

        spec: None | str | Unset
        if isinstance(self.spec, Unset):
            spec = UNSET
        else:
            spec = self.spec

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        else:
            status = self.status


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if cursor is not UNSET:
            field_dict["cursor"] = cursor
        if limit is not UNSET:
            field_dict["limit"] = limit
        if outcome is not UNSET:
            field_dict["outcome"] = outcome
        if since is not UNSET:
            field_dict["since"] = since
        if spec is not UNSET:
            field_dict["spec"] = spec
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cursor = _parse_cursor(d.pop("cursor", UNSET))


        def _parse_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        limit = _parse_limit(d.pop("limit", UNSET))


        def _parse_outcome(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        outcome = _parse_outcome(d.pop("outcome", UNSET))


        def _parse_since(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        since = _parse_since(d.pop("since", UNSET))


        def _parse_spec(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        spec = _parse_spec(d.pop("spec", UNSET))


        def _parse_status(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        status = _parse_status(d.pop("status", UNSET))


        runs_query = cls(
            cursor=cursor,
            limit=limit,
            outcome=outcome,
            since=since,
            spec=spec,
            status=status,
        )

        return runs_query

