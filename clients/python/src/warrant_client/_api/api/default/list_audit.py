from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.audit_entry import AuditEntry
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_since: int | None | Unset
    if isinstance(since, Unset):
        json_since = UNSET
    else:
        json_since = since
    params["since"] = json_since

    json_limit: int | None | Unset
    if isinstance(limit, Unset):
        json_limit = UNSET
    else:
        json_limit = limit
    params["limit"] = json_limit


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | list[AuditEntry]:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = AuditEntry.from_dict(response_200_item_data)



            response_200.append(response_200_item)

        return response_200

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | list[AuditEntry]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,

) -> Response[Problem | list[AuditEntry]]:
    """ The tenant's control actions (start, approve, deny, reconcile, cancel), read from its runs' logs.

    Args:
        since (int | None | Unset): Only actions in runs started at or after this time (ms since
            the epoch).
        limit (int | None | Unset): Most actions listed (default 100, at most 1000), newest runs
            first.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[AuditEntry]]
     """


    kwargs = _get_kwargs(
        since=since,
limit=limit,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,

) -> Problem | list[AuditEntry] | None:
    """ The tenant's control actions (start, approve, deny, reconcile, cancel), read from its runs' logs.

    Args:
        since (int | None | Unset): Only actions in runs started at or after this time (ms since
            the epoch).
        limit (int | None | Unset): Most actions listed (default 100, at most 1000), newest runs
            first.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[AuditEntry]
     """


    return sync_detailed(
        client=client,
since=since,
limit=limit,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,

) -> Response[Problem | list[AuditEntry]]:
    """ The tenant's control actions (start, approve, deny, reconcile, cancel), read from its runs' logs.

    Args:
        since (int | None | Unset): Only actions in runs started at or after this time (ms since
            the epoch).
        limit (int | None | Unset): Most actions listed (default 100, at most 1000), newest runs
            first.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[AuditEntry]]
     """


    kwargs = _get_kwargs(
        since=since,
limit=limit,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,

) -> Problem | list[AuditEntry] | None:
    """ The tenant's control actions (start, approve, deny, reconcile, cancel), read from its runs' logs.

    Args:
        since (int | None | Unset): Only actions in runs started at or after this time (ms since
            the epoch).
        limit (int | None | Unset): Most actions listed (default 100, at most 1000), newest runs
            first.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[AuditEntry]
     """


    return (await asyncio_detailed(
        client=client,
since=since,
limit=limit,

    )).parsed
