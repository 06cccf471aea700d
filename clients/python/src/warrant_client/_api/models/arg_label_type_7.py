from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
from typing import Literal, cast






T = TypeVar("T", bound="ArgLabelType7")



@_attrs_define
class ArgLabelType7:
    """ The decider produced it (provenance rules 2), in a context that held the output of
    these untrusted providers (none: trusted text only). A value a decider produced after
    it read untrusted text may be that text's, whatever its spelling.

        Attributes:
            source (Literal['decider']):
            tainted_by (list[str] | Unset): The untrusted providers whose output the decider had been shown.
     """

    source: Literal['decider']
    tainted_by: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        source = self.source

        tainted_by: list[str] | Unset = UNSET
        if not isinstance(self.tainted_by, Unset):
            tainted_by = self.tainted_by




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "source": source,
        })
        if tainted_by is not UNSET:
            field_dict["tainted_by"] = tainted_by

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = cast(Literal['decider'] , d.pop("source"))
        if source != 'decider':
            raise ValueError(f"source must match const 'decider', got '{source}'")

        tainted_by = cast(list[str], d.pop("tainted_by", UNSET))


        arg_label_type_7 = cls(
            source=source,
            tainted_by=tainted_by,
        )


        arg_label_type_7.additional_properties = d
        return arg_label_type_7

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
