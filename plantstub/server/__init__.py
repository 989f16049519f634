"""The aiohttp adapter: the request pipeline, the stub's runtime state, the admin API and the runner."""
