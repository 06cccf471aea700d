from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.new_grant import NewGrant
from ...models.problem import Problem
from ...models.standing_grant import StandingGrant
from typing import cast



def _get_kwargs(
    *,
    body: NewGrant,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/grants",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | StandingGrant:
    if response.status_code == 201:
        response_201 = StandingGrant.from_dict(response.json())



        return response_201

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | StandingGrant]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: NewGrant,

) -> Response[Problem | StandingGrant]:
    """ Give a standing grant for the caller's tenant: a call it covers is approved at once, the run
    recording which grant.

    Args:
        body (NewGrant): `POST /v1/grants` body: a standing grant for the caller's tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StandingGrant]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: NewGrant,

) -> Problem | StandingGrant | None:
    """ Give a standing grant for the caller's tenant: a call it covers is approved at once, the run
    recording which grant.

    Args:
        body (NewGrant): `POST /v1/grants` body: a standing grant for the caller's tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StandingGrant
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: NewGrant,

) -> Response[Problem | StandingGrant]:
    """ Give a standing grant for the caller's tenant: a call it covers is approved at once, the run
    recording which grant.

    Args:
        body (NewGrant): `POST /v1/grants` body: a standing grant for the caller's tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StandingGrant]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: NewGrant,

) -> Problem | StandingGrant | None:
    """ Give a standing grant for the caller's tenant: a call it covers is approved at once, the run
    recording which grant.

    Args:
        body (NewGrant): `POST /v1/grants` body: a standing grant for the caller's tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StandingGrant
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
