from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.standing_grant import StandingGrant
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    all_: bool | None | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_all_: bool | None | Unset
    if isinstance(all_, Unset):
        json_all_ = UNSET
    else:
        json_all_ = all_
    params["all"] = json_all_


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/grants",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | list[StandingGrant]:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = StandingGrant.from_dict(response_200_item_data)



            response_200.append(response_200_item)

        return response_200

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | list[StandingGrant]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    all_: bool | None | Unset = UNSET,

) -> Response[Problem | list[StandingGrant]]:
    """ The tenant's standing grants (live ones; `all=true` for revoked and expired ones too), newest first.

    Args:
        all_ (bool | None | Unset): Revoked and expired grants too.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[StandingGrant]]
     """


    kwargs = _get_kwargs(
        all_=all_,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    all_: bool | None | Unset = UNSET,

) -> Problem | list[StandingGrant] | None:
    """ The tenant's standing grants (live ones; `all=true` for revoked and expired ones too), newest first.

    Args:
        all_ (bool | None | Unset): Revoked and expired grants too.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[StandingGrant]
     """


    return sync_detailed(
        client=client,
all_=all_,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    all_: bool | None | Unset = UNSET,

) -> Response[Problem | list[StandingGrant]]:
    """ The tenant's standing grants (live ones; `all=true` for revoked and expired ones too), newest first.

    Args:
        all_ (bool | None | Unset): Revoked and expired grants too.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[StandingGrant]]
     """


    kwargs = _get_kwargs(
        all_=all_,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    all_: bool | None | Unset = UNSET,

) -> Problem | list[StandingGrant] | None:
    """ The tenant's standing grants (live ones; `all=true` for revoked and expired ones too), newest first.

    Args:
        all_ (bool | None | Unset): Revoked and expired grants too.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[StandingGrant]
     """


    return (await asyncio_detailed(
        client=client,
all_=all_,

    )).parsed
