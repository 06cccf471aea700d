from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.runs_page import RunsPage
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    status: None | str | Unset = UNSET,
    outcome: None | str | Unset = UNSET,
    spec: None | str | Unset = UNSET,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_status: None | str | Unset
    if isinstance(status, Unset):
        json_status = UNSET
    else:
        json_status = status
    params["status"] = json_status

    json_outcome: None | str | Unset
    if isinstance(outcome, Unset):
        json_outcome = UNSET
    else:
        json_outcome = outcome
    params["outcome"] = json_outcome

    json_spec: None | str | Unset
    if isinstance(spec, Unset):
        json_spec = UNSET
    else:
        json_spec = spec
    params["spec"] = json_spec

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

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RunsPage:
    if response.status_code == 200:
        response_200 = RunsPage.from_dict(response.json())



        return response_200

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RunsPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    status: None | str | Unset = UNSET,
    outcome: None | str | Unset = UNSET,
    spec: None | str | Unset = UNSET,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,

) -> Response[Problem | RunsPage]:
    """ The tenant's runs, newest first, a page at a time.

    Args:
        status (None | str | Unset): `running`, `interrupted`, `waiting`, `ready` or an outcome.
        outcome (None | str | Unset): An outcome (`attained`, `not_attained`, `failed`,
            `cancelled`, `exhausted`).
        spec (None | str | Unset): A spec id.
        since (int | None | Unset): Runs started at or after this time (ms since the epoch).
        limit (int | None | Unset): Most runs on the page (default 50, at most 500).
        cursor (None | str | Unset): The previous page's `next`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunsPage]
     """


    kwargs = _get_kwargs(
        status=status,
outcome=outcome,
spec=spec,
since=since,
limit=limit,
cursor=cursor,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    status: None | str | Unset = UNSET,
    outcome: None | str | Unset = UNSET,
    spec: None | str | Unset = UNSET,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,

) -> Problem | RunsPage | None:
    """ The tenant's runs, newest first, a page at a time.

    Args:
        status (None | str | Unset): `running`, `interrupted`, `waiting`, `ready` or an outcome.
        outcome (None | str | Unset): An outcome (`attained`, `not_attained`, `failed`,
            `cancelled`, `exhausted`).
        spec (None | str | Unset): A spec id.
        since (int | None | Unset): Runs started at or after this time (ms since the epoch).
        limit (int | None | Unset): Most runs on the page (default 50, at most 500).
        cursor (None | str | Unset): The previous page's `next`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunsPage
     """


    return sync_detailed(
        client=client,
status=status,
outcome=outcome,
spec=spec,
since=since,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    status: None | str | Unset = UNSET,
    outcome: None | str | Unset = UNSET,
    spec: None | str | Unset = UNSET,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,

) -> Response[Problem | RunsPage]:
    """ The tenant's runs, newest first, a page at a time.

    Args:
        status (None | str | Unset): `running`, `interrupted`, `waiting`, `ready` or an outcome.
        outcome (None | str | Unset): An outcome (`attained`, `not_attained`, `failed`,
            `cancelled`, `exhausted`).
        spec (None | str | Unset): A spec id.
        since (int | None | Unset): Runs started at or after this time (ms since the epoch).
        limit (int | None | Unset): Most runs on the page (default 50, at most 500).
        cursor (None | str | Unset): The previous page's `next`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunsPage]
     """


    kwargs = _get_kwargs(
        status=status,
outcome=outcome,
spec=spec,
since=since,
limit=limit,
cursor=cursor,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    status: None | str | Unset = UNSET,
    outcome: None | str | Unset = UNSET,
    spec: None | str | Unset = UNSET,
    since: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,

) -> Problem | RunsPage | None:
    """ The tenant's runs, newest first, a page at a time.

    Args:
        status (None | str | Unset): `running`, `interrupted`, `waiting`, `ready` or an outcome.
        outcome (None | str | Unset): An outcome (`attained`, `not_attained`, `failed`,
            `cancelled`, `exhausted`).
        spec (None | str | Unset): A spec id.
        since (int | None | Unset): Runs started at or after this time (ms since the epoch).
        limit (int | None | Unset): Most runs on the page (default 50, at most 500).
        cursor (None | str | Unset): The previous page's `next`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunsPage
     """


    return (await asyncio_detailed(
        client=client,
status=status,
outcome=outcome,
spec=spec,
since=since,
limit=limit,
cursor=cursor,

    )).parsed
