"""Microsoft Entra in the fake: the OpenID configuration and token endpoint of a tenant (client
secret or client assertion, checked against ``FakeAzure.clients``) and an App Service-style
managed-identity endpoint (``IDENTITY_ENDPOINT``). Every token they issue is one ARM accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from providers.azure.tests.fake_azure_arm import JSON

if TYPE_CHECKING:
    from providers.azure.tests.fake_azure import FakeAzure


def entra(fake: FakeAzure, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], JSON]:
    """A request to a tenant's discovery or token endpoint."""
    tenant = path.strip("/").split("/")[0]
    if path.endswith("/.well-known/openid-configuration"):
        base = f"{fake.url}/{tenant}"
        return (
            200,
            {},
            {
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
                "issuer": f"{base}/v2.0",
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            },
        )
    if method == "POST" and path.endswith("/oauth2/v2.0/token"):
        form = parse_qs(body.decode())
        fake.token_requests.append(form)
        client = form.get("client_id", [""])[0]
        secret = form.get("client_secret", [None])[0]
        assertion = form.get("client_assertion", [None])[0]
        expected = fake.clients.get(client)
        if expected is None or (expected not in (secret, assertion)):
            return (
                401,
                {},
                {
                    "error": "invalid_client",
                    "error_description": "AADSTS7000215: Invalid client secret provided. "
                    "Ensure the secret being sent in the request is the client secret "
                    "value, not the client secret ID.",
                    "error_codes": [7000215],
                },
            )
        return (
            200,
            {},
            {
                "token_type": "Bearer",
                "expires_in": 3599,
                "ext_expires_in": 3599,
                "access_token": issue_token(fake),
            },
        )
    return 404, {}, {"error": "not_found"}


def managed_identity(
    fake: FakeAzure, query: dict[str, list[str]], headers: dict[str, str]
) -> tuple[int, dict[str, str], JSON]:
    """App Service-style managed identity endpoint (``IDENTITY_ENDPOINT``)."""
    header = {k.lower(): v for k, v in headers.items()}.get("x-identity-header")
    fake.token_requests.append({**query, "x-identity-header": [header or ""]})
    if header != fake.identity_header:
        return 401, {}, {"error": "unauthorized", "error_description": "bad identity header"}
    token = issue_token(fake)
    expires = int(fake.now().timestamp()) + 86400 * 365 * 10
    return (
        200,
        {},
        {
            "access_token": token,
            "expires_on": str(expires),
            "resource": query.get("resource", [""])[0],
            "token_type": "Bearer",
            "client_id": query.get("client_id", ["system-assigned"])[0],
        },
    )


def issue_token(fake: FakeAzure) -> str:
    """A new token ARM accepts."""
    token = f"fake-aad-token-{next(fake.ids)}"
    fake.tokens.add(token)
    return token
