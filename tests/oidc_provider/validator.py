"""The provider's claims: a stable ``sub`` (like Keycloak's user id: not the user name,
not the row number) and a ``groups`` claim, in the ID token and from userinfo."""

from __future__ import annotations

import uuid
from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator

SUBJECTS = uuid.UUID("6f1c1d52-1f5e-4a53-9b8e-6d1f0c2a9e41")


def subject_of(user: Any) -> str:
    return str(uuid.uuid5(SUBJECTS, f"user-{user.pk}"))


class GroupsValidator(OAuth2Validator):
    # Groups go with "openid": every client of this provider gets them.
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "openid"}

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        return {
            "sub": subject_of(user),
            "preferred_username": user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "email": user.email,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }
