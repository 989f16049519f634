"""The pytest plugin's parts (the entry point is `plantstub.pytest_plugin`): marker, options, the running stubs and
sidecar sessions, strict mode and the coverage summary. Importing them loads no server code."""
