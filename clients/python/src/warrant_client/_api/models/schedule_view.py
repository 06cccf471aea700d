from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.schedule_view_inputs import ScheduleViewInputs
  from ..models.tick import Tick





T = TypeVar("T", bound="ScheduleView")



@_attrs_define
class ScheduleView:
    """ A schedule as a front door shows it: what it starts, when, and how its last tick went.

        Attributes:
            catch_up (str): `latest`, `all` or `none`.
            cron (str): The cron expression.
            id (str): Its name.
            inputs (ScheduleViewInputs): The inputs each run is started with.
            overlap (str): `skip`, `queue` or `cancel`.
            paused (bool): Whether it is paused.
            spec_id (str): The catalog spec each tick starts.
            tenant (str): The tenant its runs act for.
            time_zone (str): Its time zone.
            user (str): The user its runs act for.
            last_tick (None | Tick | Unset): Its latest tick.
            next_tick_ms (int | None | Unset): Its next tick (ms since the epoch), unless paused or none comes within a
                year.
            spec_digest (None | str | Unset): Exactly this version of it, if pinned.
     """

    catch_up: str
    cron: str
    id: str
    inputs: ScheduleViewInputs
    overlap: str
    paused: bool
    spec_id: str
    tenant: str
    time_zone: str
    user: str
    last_tick: None | Tick | Unset = UNSET
    next_tick_ms: int | None | Unset = UNSET
    spec_digest: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.schedule_view_inputs import ScheduleViewInputs # noqa: PLC0415
        from ..models.tick import Tick # noqa: PLC0415
        catch_up = self.catch_up

        cron = self.cron

        id = self.id

        inputs = self.inputs.to_dict()

        overlap = self.overlap

        paused = self.paused

        spec_id = self.spec_id

        tenant = self.tenant

        time_zone = self.time_zone

        user = self.user

        last_tick: dict[str, Any] | None | Unset
        if isinstance(self.last_tick, Unset):
            last_tick = UNSET
        elif isinstance(self.last_tick, Tick):
            last_tick = self.last_tick.to_dict()
        else:
            last_tick = self.last_tick

        next_tick_ms: int | None | Unset
        if isinstance(self.next_tick_ms, Unset):
            next_tick_ms = UNSET
        else:
            next_tick_ms = self.next_tick_ms

        spec_digest: None | str | Unset
        if isinstance(self.spec_digest, Unset):
            spec_digest = UNSET
        else:
            spec_digest = self.spec_digest


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "catch_up": catch_up,
            "cron": cron,
            "id": id,
            "inputs": inputs,
            "overlap": overlap,
            "paused": paused,
            "spec_id": spec_id,
            "tenant": tenant,
            "time_zone": time_zone,
            "user": user,
        })
        if last_tick is not UNSET:
            field_dict["last_tick"] = last_tick
        if next_tick_ms is not UNSET:
            field_dict["next_tick_ms"] = next_tick_ms
        if spec_digest is not UNSET:
            field_dict["spec_digest"] = spec_digest

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.schedule_view_inputs import ScheduleViewInputs # noqa: PLC0415
        from ..models.tick import Tick # noqa: PLC0415
        d = dict(src_dict)
        catch_up = d.pop("catch_up")

        cron = d.pop("cron")

        id = d.pop("id")

        inputs = ScheduleViewInputs.from_dict(d.pop("inputs"))




        overlap = d.pop("overlap")

        paused = d.pop("paused")

        spec_id = d.pop("spec_id")

        tenant = d.pop("tenant")

        time_zone = d.pop("time_zone")

        user = d.pop("user")

        def _parse_last_tick(data: object) -> None | Tick | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                last_tick_type_0 = Tick.from_dict(data)



                return last_tick_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Tick | Unset, data)

        last_tick = _parse_last_tick(d.pop("last_tick", UNSET))


        def _parse_next_tick_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        next_tick_ms = _parse_next_tick_ms(d.pop("next_tick_ms", UNSET))


        def _parse_spec_digest(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        spec_digest = _parse_spec_digest(d.pop("spec_digest", UNSET))


        schedule_view = cls(
            catch_up=catch_up,
            cron=cron,
            id=id,
            inputs=inputs,
            overlap=overlap,
            paused=paused,
            spec_id=spec_id,
            tenant=tenant,
            time_zone=time_zone,
            user=user,
            last_tick=last_tick,
            next_tick_ms=next_tick_ms,
            spec_digest=spec_digest,
        )


        schedule_view.additional_properties = d
        return schedule_view

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
