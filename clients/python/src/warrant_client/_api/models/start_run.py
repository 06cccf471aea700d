from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.start_run_inputs import StartRunInputs





T = TypeVar("T", bound="StartRun")



@_attrs_define
class StartRun:
    """ What `POST /v1/runs` takes.

        Attributes:
            ask_tools (list[str] | Unset): Tools every call to needs a person's approval.
            decider (None | str | Unset): `kind:argument` (a script path resolves under the specs folder); the spec's
                default
                decider when absent.
            deny_tools (list[str] | Unset): Tools every call to is denied.
            inputs (StartRunInputs | Unset): Values of the spec's inputs, by name: checked against the spec's schemas before
                the
                run starts; the run carries them as `input.<name>`, and provenance labels them
                `input` (a user's value, like the objective).
            policies (list[str] | Unset): Policy files under the specs folder, ruling with the spec's.
            profile (None | str | Unset): A security profile (`untrusted-input`), instead of the spec's.
            spec (Any | Unset): The spec, inline: YAML or JSON text, or a JSON object. Its relative paths resolve
                against the server's specs folder.
            spec_digest (None | str | Unset): The version of `spec_id` to start (its digest, or a prefix of it).
            spec_id (None | str | Unset): Or a spec of the catalog kept in the store (`warrant specs add`), by id: its
                newest
                version, or `spec_digest`'s.
            spec_path (None | str | Unset): Or a spec file under the server's specs folder (`--specs`).
     """

    ask_tools: list[str] | Unset = UNSET
    decider: None | str | Unset = UNSET
    deny_tools: list[str] | Unset = UNSET
    inputs: StartRunInputs | Unset = UNSET
    policies: list[str] | Unset = UNSET
    profile: None | str | Unset = UNSET
    spec: Any | Unset = UNSET
    spec_digest: None | str | Unset = UNSET
    spec_id: None | str | Unset = UNSET
    spec_path: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.start_run_inputs import StartRunInputs # noqa: PLC0415
        ask_tools: list[str] | Unset = UNSET
        if not isinstance(self.ask_tools, Unset):
            ask_tools = self.ask_tools



        decider: None | str | Unset
        if isinstance(self.decider, Unset):
            decider = UNSET
        else:
            decider = self.decider

        deny_tools: list[str] | Unset = UNSET
        if not isinstance(self.deny_tools, Unset):
            deny_tools = self.deny_tools



        inputs: dict[str, Any] | Unset = UNSET
        if not isinstance(self.inputs, Unset):
            inputs = self.inputs.to_dict()

        policies: list[str] | Unset = UNSET
        if not isinstance(self.policies, Unset):
            policies = self.policies



        profile: None | str | Unset
        if isinstance(self.profile, Unset):
            profile = UNSET
        else:
            profile = self.profile

        spec = self.spec

        spec_digest: None | str | Unset
        if isinstance(self.spec_digest, Unset):
            spec_digest = UNSET
        else:
            spec_digest = self.spec_digest

        spec_id: None | str | Unset
        if isinstance(self.spec_id, Unset):
            spec_id = UNSET
        else:
            spec_id = self.spec_id

        spec_path: None | str | Unset
        if isinstance(self.spec_path, Unset):
            spec_path = UNSET
        else:
            spec_path = self.spec_path


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if ask_tools is not UNSET:
            field_dict["ask_tools"] = ask_tools
        if decider is not UNSET:
            field_dict["decider"] = decider
        if deny_tools is not UNSET:
            field_dict["deny_tools"] = deny_tools
        if inputs is not UNSET:
            field_dict["inputs"] = inputs
        if policies is not UNSET:
            field_dict["policies"] = policies
        if profile is not UNSET:
            field_dict["profile"] = profile
        if spec is not UNSET:
            field_dict["spec"] = spec
        if spec_digest is not UNSET:
            field_dict["spec_digest"] = spec_digest
        if spec_id is not UNSET:
            field_dict["spec_id"] = spec_id
        if spec_path is not UNSET:
            field_dict["spec_path"] = spec_path

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.start_run_inputs import StartRunInputs # noqa: PLC0415
        d = dict(src_dict)
        ask_tools = cast(list[str], d.pop("ask_tools", UNSET))


        def _parse_decider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        decider = _parse_decider(d.pop("decider", UNSET))


        deny_tools = cast(list[str], d.pop("deny_tools", UNSET))


        _inputs = d.pop("inputs", UNSET)
        inputs: StartRunInputs | Unset
        if isinstance(_inputs,  Unset):
            inputs = UNSET
        else:
            inputs = StartRunInputs.from_dict(_inputs)




        policies = cast(list[str], d.pop("policies", UNSET))


        def _parse_profile(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        profile = _parse_profile(d.pop("profile", UNSET))


        spec = d.pop("spec", UNSET)

        def _parse_spec_digest(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        spec_digest = _parse_spec_digest(d.pop("spec_digest", UNSET))


        def _parse_spec_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        spec_id = _parse_spec_id(d.pop("spec_id", UNSET))


        def _parse_spec_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        spec_path = _parse_spec_path(d.pop("spec_path", UNSET))


        start_run = cls(
            ask_tools=ask_tools,
            decider=decider,
            deny_tools=deny_tools,
            inputs=inputs,
            policies=policies,
            profile=profile,
            spec=spec,
            spec_digest=spec_digest,
            spec_id=spec_id,
            spec_path=spec_path,
        )

        return start_run

