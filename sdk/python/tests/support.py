"""What the tests share: a client for the server named by LEVERS9_SERVER and
LEVERS9_TOKEN (a tenant admin's token), and set-ups made through it."""

import os
import unittest
import uuid

import levers9


def admin_client() -> levers9.Client:
    """The admin's client; the tests are skipped without a server (the Go
    test that runs them fails on any skip)."""
    if not os.environ.get("LEVERS9_SERVER") or not os.environ.get("LEVERS9_TOKEN"):
        raise unittest.SkipTest("set LEVERS9_SERVER and LEVERS9_TOKEN to a test server and a tenant admin's token")
    return levers9.Client()


def unique(prefix: str) -> str:
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def everyone(client: levers9.Client) -> str:
    """The ID of the group every user of the tenant is in."""
    data = client.graphql('{ groups(where: {name: "everyone"}) { edges { node { id } } } }')
    return data["groups"]["edges"][0]["node"]["id"]


def create_queue(client: levers9.Client, **fields) -> str:
    """A queue open to everyone with no nodes: its jobs stay PENDING."""
    name = unique("q")
    fields.setdefault("groupIDs", [everyone(client)])
    client.graphql("mutation($i: CreateQueueInput!) { createQueue(input: $i) { id } }",
                   {"i": dict(fields, name=name)})
    return name


def member_client(client: levers9.Client) -> levers9.Client:
    """A client of a new MEMBER user of the tenant."""
    email = unique("member") + "@levers9.local"
    password = "a long test password"
    client.graphql("mutation($e: String!, $p: String!) { createUser(input: {email: $e, password: $p, role: MEMBER}) { id } }",
                   {"e": email, "p": password})
    return levers9.Client.sign_in(email, password, server=client.server)
