from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="GrantsQuery")



@_attrs_define
class GrantsQuery:
    """ `GET /v1/grants` parameters.

        Attributes:
            all_ (bool | None | Unset): Revoked and expired grants too.
     """

    all_: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        all_: bool | None | Unset
        if isinstance(self.all_, Unset):
            all_ = UNSET
        else:
            all_ = self.all_


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if all_ is not UNSET:
            field_dict["all"] = all_

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_all_(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        all_ = _parse_all_(d.pop("all", UNSET))


        grants_query = cls(
            all_=all_,
        )

        return grants_query

