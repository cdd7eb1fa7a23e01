"""Credentials from azure-identity, chosen by the ``auth-mode`` option.

* ``workload-identity``: a federated token file (AKS workload identity; the usual choice for
  a pod), ``AZURE_FEDERATED_TOKEN_FILE`` when the option is not set;
* ``client-secret``: a service principal; the secret is read from ``client-secret-file`` or
  ``AZURE_CLIENT_SECRET``, never from the command line;
* ``managed-identity``: the VM's or pod's managed identity (``client-id`` for a
  user-assigned one);
* ``default``: azure-identity's ``DefaultAzureCredential`` chain.

No credential is used until the first ARM call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from azure.core.credentials import TokenCredential

from nodewright_azure.options import (
    CLIENT_ID,
    CLIENT_SECRET_FILE,
    TENANT_ID,
    TOKEN_FILE,
    Settings,
    SettingsError,
)


def _need(value: str, env: str, option: str, mode: str) -> str:
    found = value or os.environ.get(env, "")
    if not found:
        raise SettingsError(f"auth-mode {mode} needs --provider-option azure.{option}=... or {env}")
    return found


def credential(settings: Settings) -> TokenCredential:
    # azure-identity is imported only when a credential is made: listing the plugin or
    # simulating without Azure does not pay for it.
    from azure.identity import (  # noqa: PLC0415
        ClientSecretCredential,
        DefaultAzureCredential,
        ManagedIdentityCredential,
        WorkloadIdentityCredential,
    )

    mode = settings.auth_mode
    common: dict[str, Any] = {"authority": settings.authority_host}
    if settings.ca_bundle:
        common["connection_verify"] = settings.ca_bundle
    if settings.authority_host != Settings.authority_host:
        # A private authority (sovereign cloud, test) has no instance-discovery endpoint.
        common["disable_instance_discovery"] = True
    if mode == "workload-identity":
        return WorkloadIdentityCredential(
            tenant_id=_need(settings.tenant_id, "AZURE_TENANT_ID", TENANT_ID, mode),
            client_id=_need(settings.client_id, "AZURE_CLIENT_ID", CLIENT_ID, mode),
            token_file_path=_need(
                settings.federated_token_file, "AZURE_FEDERATED_TOKEN_FILE", TOKEN_FILE, mode
            ),
            **common,
        )
    if mode == "client-secret":
        if settings.client_secret_file:
            try:
                secret = Path(settings.client_secret_file).read_text().strip()
            except OSError as error:
                raise SettingsError(
                    f"{CLIENT_SECRET_FILE}: cannot read {settings.client_secret_file}: "
                    f"{error.strerror}"
                ) from None
        else:
            secret = _need("", "AZURE_CLIENT_SECRET", CLIENT_SECRET_FILE, mode)
        return ClientSecretCredential(
            tenant_id=_need(settings.tenant_id, "AZURE_TENANT_ID", TENANT_ID, mode),
            client_id=_need(settings.client_id, "AZURE_CLIENT_ID", CLIENT_ID, mode),
            client_secret=secret,
            **common,
        )
    if mode == "managed-identity":
        kwargs: dict[str, Any] = {}
        if settings.client_id:
            kwargs["client_id"] = settings.client_id
        if settings.ca_bundle:
            kwargs["connection_verify"] = settings.ca_bundle
        return ManagedIdentityCredential(**kwargs)
    return DefaultAzureCredential(**common)
