"""Webhooks and callbacks at run time: subscriptions, delivery off the request path, the delivery log."""
