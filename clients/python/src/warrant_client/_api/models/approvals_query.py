from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ApprovalsQuery")



@_attrs_define
class ApprovalsQuery:
    """ `GET /v1/approvals` parameters.

        Attributes:
            run (None | str | Unset): Every request of this run (answered or not); else the pending ones of every run.
     """

    run: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        run: None | str | Unset
        if isinstance(self.run, Unset):
            run = UNSET
        else:
            run = self.run


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if run is not UNSET:
            field_dict["run"] = run

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_run(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        run = _parse_run(d.pop("run", UNSET))


        approvals_query = cls(
            run=run,
        )

        return approvals_query

