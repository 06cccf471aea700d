from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BuildInfo")



@_attrs_define
class BuildInfo:
    """ The build of Warrant that started a run (`run_started.build`), so runs recorded by
    different builds can be told apart. Set by the front door that starts runs
    (`Engine::with_build`); an embedder names its own.

        Attributes:
            version (str): The version (`0.1.0`).
            commit (str | Unset): The git commit it was built from, short, with `-dirty` when the tree had changes;
                `unknown` when it was not built from git. Default: ''.
            date (str | Unset): The day it was built (UTC, `YYYY-MM-DD`). Default: ''.
            features (list[str] | Unset): The cargo features compiled in, sorted.
     """

    version: str
    commit: str | Unset = ''
    date: str | Unset = ''
    features: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        version = self.version

        commit = self.commit

        date = self.date

        features: list[str] | Unset = UNSET
        if not isinstance(self.features, Unset):
            features = self.features




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "version": version,
        })
        if commit is not UNSET:
            field_dict["commit"] = commit
        if date is not UNSET:
            field_dict["date"] = date
        if features is not UNSET:
            field_dict["features"] = features

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        version = d.pop("version")

        commit = d.pop("commit", UNSET)

        date = d.pop("date", UNSET)

        features = cast(list[str], d.pop("features", UNSET))


        build_info = cls(
            version=version,
            commit=commit,
            date=date,
            features=features,
        )


        build_info.additional_properties = d
        return build_info

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
