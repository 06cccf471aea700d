from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.grant_source import GrantSource
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ArgConstraint")



@_attrs_define
class ArgConstraint:
    """ Constraints on one argument.

        Attributes:
            from_ (list[GrantSource] | Unset): Its value must come from one of these (every leaf of it).
            max_ (float | None | Unset): A number at most this.
            min_ (float | None | Unset): A number at least this.
            one_of (list[Any] | Unset): It must be one of these values.
     """

    from_: list[GrantSource] | Unset = UNSET
    max_: float | None | Unset = UNSET
    min_: float | None | Unset = UNSET
    one_of: list[Any] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from_: list[str] | Unset = UNSET
        if not isinstance(self.from_, Unset):
            from_ = []
            for from_item_data in self.from_:
                from_item = from_item_data.value
                from_.append(from_item)



        max_: float | None | Unset
        if isinstance(self.max_, Unset):
            max_ = UNSET
        else:
            max_ = self.max_

        min_: float | None | Unset
        if isinstance(self.min_, Unset):
            min_ = UNSET
        else:
            min_ = self.min_

        one_of: list[Any] | Unset = UNSET
        if not isinstance(self.one_of, Unset):
            one_of = self.one_of




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if from_ is not UNSET:
            field_dict["from"] = from_
        if max_ is not UNSET:
            field_dict["max"] = max_
        if min_ is not UNSET:
            field_dict["min"] = min_
        if one_of is not UNSET:
            field_dict["one_of"] = one_of

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _from_ = d.pop("from", UNSET)
        from_: list[GrantSource] | Unset = UNSET
        if _from_ is not UNSET:
            from_ = []
            for from_item_data in _from_:
                from_item = GrantSource(from_item_data)



                from_.append(from_item)


        def _parse_max_(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_ = _parse_max_(d.pop("max", UNSET))


        def _parse_min_(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        min_ = _parse_min_(d.pop("min", UNSET))


        one_of = cast(list[Any], d.pop("one_of", UNSET))


        arg_constraint = cls(
            from_=from_,
            max_=max_,
            min_=min_,
            one_of=one_of,
        )


        arg_constraint.additional_properties = d
        return arg_constraint

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
