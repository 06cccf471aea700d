from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="ReconcileBody")



@_attrs_define
class ReconcileBody:
    """ `POST /v1/runs/{id}/calls/{call}/reconcile` body.

        Attributes:
            happened (bool): Whether the call's effect happened.
            note (str | Unset): What was found out, and how. Default: ''.
            resend (bool | Unset): It did not happen: send it again (as a new call, ruled on again). Default: False.
     """

    happened: bool
    note: str | Unset = ''
    resend: bool | Unset = False





    def to_dict(self) -> dict[str, Any]:
        happened = self.happened

        note = self.note

        resend = self.resend


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "happened": happened,
        })
        if note is not UNSET:
            field_dict["note"] = note
        if resend is not UNSET:
            field_dict["resend"] = resend

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        happened = d.pop("happened")

        note = d.pop("note", UNSET)

        resend = d.pop("resend", UNSET)

        reconcile_body = cls(
            happened=happened,
            note=note,
            resend=resend,
        )

        return reconcile_body

