from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="CatalogSpec")



@_attrs_define
class CatalogSpec:
    """ A spec of the catalog kept in the store, as `GET /v1/specs` lists it.

        Attributes:
            added_at_ms (int): When this version was added (ms since the epoch), and by whom.
            added_by (str): Who added it.
            digest (str): The current version's digest.
            id (str): Its id: what `spec_id` names.
            inputs (Any): The inputs a start gives it, with their JSON Schemas.
            objective (str): Its objective.
     """

    added_at_ms: int
    added_by: str
    digest: str
    id: str
    inputs: Any
    objective: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        added_at_ms = self.added_at_ms

        added_by = self.added_by

        digest = self.digest

        id = self.id

        inputs = self.inputs

        objective = self.objective


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "added_at_ms": added_at_ms,
            "added_by": added_by,
            "digest": digest,
            "id": id,
            "inputs": inputs,
            "objective": objective,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        added_at_ms = d.pop("added_at_ms")

        added_by = d.pop("added_by")

        digest = d.pop("digest")

        id = d.pop("id")

        inputs = d.pop("inputs")

        objective = d.pop("objective")

        catalog_spec = cls(
            added_at_ms=added_at_ms,
            added_by=added_by,
            digest=digest,
            id=id,
            inputs=inputs,
            objective=objective,
        )


        catalog_spec.additional_properties = d
        return catalog_spec

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
