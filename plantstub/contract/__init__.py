"""What the API promises: the OpenAPI model and its loading, schema checks, routing, request checks, answers."""
