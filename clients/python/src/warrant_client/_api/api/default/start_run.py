from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.run_ref import RunRef
from ...models.start_run import StartRun
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    body: StartRun,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key



    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/runs",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RunRef:
    if response.status_code == 200:
        response_200 = RunRef.from_dict(response.json())



        return response_200

    if response.status_code == 201:
        response_201 = RunRef.from_dict(response.json())



        return response_201

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())



        return response_429

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RunRef]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: StartRun,
    idempotency_key: str | Unset = UNSET,

) -> Response[Problem | RunRef]:
    """ Start a run: the operator's spec by `spec_path` or `spec_id` (a runner's), or an inline `spec` (an
    author's), with its `inputs`. An `Idempotency-Key` header returns the same run for the same key and
    body; 409 for another body; 429 past a tenant's quota.

    Args:
        idempotency_key (str | Unset):
        body (StartRun): What `POST /v1/runs` takes.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunRef]
     """


    kwargs = _get_kwargs(
        body=body,
idempotency_key=idempotency_key,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: StartRun,
    idempotency_key: str | Unset = UNSET,

) -> Problem | RunRef | None:
    """ Start a run: the operator's spec by `spec_path` or `spec_id` (a runner's), or an inline `spec` (an
    author's), with its `inputs`. An `Idempotency-Key` header returns the same run for the same key and
    body; 409 for another body; 429 past a tenant's quota.

    Args:
        idempotency_key (str | Unset):
        body (StartRun): What `POST /v1/runs` takes.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunRef
     """


    return sync_detailed(
        client=client,
body=body,
idempotency_key=idempotency_key,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: StartRun,
    idempotency_key: str | Unset = UNSET,

) -> Response[Problem | RunRef]:
    """ Start a run: the operator's spec by `spec_path` or `spec_id` (a runner's), or an inline `spec` (an
    author's), with its `inputs`. An `Idempotency-Key` header returns the same run for the same key and
    body; 409 for another body; 429 past a tenant's quota.

    Args:
        idempotency_key (str | Unset):
        body (StartRun): What `POST /v1/runs` takes.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunRef]
     """


    kwargs = _get_kwargs(
        body=body,
idempotency_key=idempotency_key,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: StartRun,
    idempotency_key: str | Unset = UNSET,

) -> Problem | RunRef | None:
    """ Start a run: the operator's spec by `spec_path` or `spec_id` (a runner's), or an inline `spec` (an
    author's), with its `inputs`. An `Idempotency-Key` header returns the same run for the same key and
    body; 409 for another body; 429 past a tenant's quota.

    Args:
        idempotency_key (str | Unset):
        body (StartRun): What `POST /v1/runs` takes.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunRef
     """


    return (await asyncio_detailed(
        client=client,
body=body,
idempotency_key=idempotency_key,

    )).parsed
