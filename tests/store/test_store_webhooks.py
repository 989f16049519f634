"""--stateful with webhooks: the default trigger carries the record the store created, key included."""

from __future__ import annotations

from plantstub import Stub
from tests.helpers import HANG, Receiver, call, write

# A created record's key is assigned by the store (the request has no `id`); the webhook carries the record.
TICKETS = """\
openapi: 3.1.0
info: {title: Tickets, version: '1'}
paths:
  /tickets:
    get:
      responses:
        '200':
          description: the tickets
          content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Ticket'}}}}
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Ticket'}}}
      responses:
        '201':
          description: created
          content: {application/json: {schema: {$ref: '#/components/schemas/Ticket'}}}
  /tickets/{id}:
    get:
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200':
          description: one
          content: {application/json: {schema: {$ref: '#/components/schemas/Ticket'}}}
        '404': {description: none}
webhooks:
  ticketOpened:
    post:
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/Ticket'}}}
      responses: {'204': {description: received}}
components:
  schemas:
    Ticket:
      type: object
      required: [title]
      properties:
        id: {type: integer}
        title: {type: string}
"""


def test_store_create_list_and_receive_the_webhook_on_the_full_plant_store():
    with Receiver() as receiver, Stub(spec="plant-store-full", stateful=True, webhook=[receiver.url]) as stub:
        for i, name in enumerate(["Fern", "Ivy"], 1):
            assert call(stub.url, "POST", "/plants", {"id": i, "name": name})[0] == 200
        assert call(stub.url, "GET", "/plants") == (200, [{"name": "Fern"}, {"name": "Ivy"}])
        stub.wait_for_deliveries(2, timeout=HANG)
        # sent at once by the stub's senders: they may arrive in either order
        assert sorted((got["body"] for got in receiver.received), key=lambda body: body["id"]) == [
            {"id": 1, "name": "Fern"}, {"id": 2, "name": "Ivy"}]
        assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Again"})[0] == 400  # a refused create sends nothing
        assert call(stub.url, "GET", "/plants?limit=1") == (200, [{"name": "Fern"}])
        assert len(stub.deliveries) == 2


def test_store_webhook_carries_the_assigned_key(tmp_path):
    spec = write(tmp_path, "tickets.yaml", TICKETS)
    with Receiver(statuses=(204,)) as receiver, Stub(spec=spec, stateful=True, webhook=[receiver.url]) as stub:
        assert call(stub.url, "POST", "/tickets", {"title": "Leak"}) == (201, {"id": 1, "title": "Leak"})
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.name, delivery.body, delivery.valid) == ("ticketOpened", {"id": 1, "title": "Leak"}, True)
        assert receiver.received[0]["body"] == {"id": 1, "title": "Leak"}
