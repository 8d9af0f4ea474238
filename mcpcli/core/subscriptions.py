"""What a client asks for when it subscribes, and which notifications then are whose.

Servers up to 2025-11-25 get `resources/subscribe` for each URI (and `resources/unsubscribe`
when the client stops) and send list changes on their own; a 2026-07-28 server gets one
`subscriptions/listen` naming everything wanted, acknowledges it, and tags what it sends
for it with the listen's id (`_meta` subscriptionId), learnt from the acknowledgement.
"""

from __future__ import annotations

from typing import Any

from mcpcli.core.protocol import SUBSCRIPTION_ID_KEY

__all__ = ["ACKNOWLEDGED", "LISTEN", "notification_methods", "subscription_id", "takes", "wanted"]

JSON = dict[str, Any]

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


def notification_methods(*, resources: list[str] | None, tools: bool, prompts: bool,
                         resource_list: bool) -> frozenset[str]:
    """The notifications a subscription to these delivers."""
    methods = set()
    if resources:
        methods.add("notifications/resources/updated")
    if tools:
        methods.add("notifications/tools/list_changed")
    if prompts:
        methods.add("notifications/prompts/list_changed")
    if resource_list:
        methods.add("notifications/resources/list_changed")
    return frozenset(methods)


def wanted(*, resources: list[str] | None, tools: bool, prompts: bool, resource_list: bool) -> JSON:
    """`subscriptions/listen`'s `notifications` (2026-07-28)."""
    out: JSON = {}
    if tools:
        out["toolsListChanged"] = True
    if prompts:
        out["promptsListChanged"] = True
    if resource_list:
        out["resourcesListChanged"] = True
    if resources:
        out["resourceSubscriptions"] = list(resources)
    return out


def subscription_id(params: JSON) -> Any:
    """The listen a 2026-07-28 notification is for (None: untagged)."""
    meta = params.get("_meta")
    return meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None


def takes(methods: frozenset[str], own_id: Any, method: str, params: JSON) -> bool:
    """Whether a subscription (its methods, its listen's id once known) takes a notification:
    one of its kinds, and not tagged for another listen."""
    if method not in methods:
        return False
    tag = subscription_id(params)
    return own_id is None or tag is None or tag == own_id
