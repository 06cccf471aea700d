from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="AuditEntry")



@_attrs_define
class AuditEntry:
    """ One control action, as the run's log records it.

        Attributes:
            action (str): `start`, `approve`, `deny`, `reconcile` or `cancel`.
            at_ms (int): When (ms since the epoch).
            by (str): Who: `tenant/user` for the server's principals, the operator's name for the CLI's.
            detail (str): What it was about (a request, a call, a reason).
            run_id (str): The run.
            seq (int): The event that records it.
     """

    action: str
    at_ms: int
    by: str
    detail: str
    run_id: str
    seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        action = self.action

        at_ms = self.at_ms

        by = self.by

        detail = self.detail

        run_id = self.run_id

        seq = self.seq


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "action": action,
            "at_ms": at_ms,
            "by": by,
            "detail": detail,
            "run_id": run_id,
            "seq": seq,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        action = d.pop("action")

        at_ms = d.pop("at_ms")

        by = d.pop("by")

        detail = d.pop("detail")

        run_id = d.pop("run_id")

        seq = d.pop("seq")

        audit_entry = cls(
            action=action,
            at_ms=at_ms,
            by=by,
            detail=detail,
            run_id=run_id,
            seq=seq,
        )


        audit_entry.additional_properties = d
        return audit_entry

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
