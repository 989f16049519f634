"""Runtime: what a stub knows of its spec and scenarios, built once by load(settings) and shared by every session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from plantstub._fields import ByFields
from plantstub._gc import collector_paused
from plantstub.config import Settings, fresh_seed
from plantstub.contract.dynamic import Dynamic
from plantstub.contract.load import load_spec
from plantstub.contract.model import Operation, Spec
from plantstub.contract.operations import ServedOperation, serve
from plantstub.contract.router import Router
from plantstub.errors import ConfigError
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.library import ScenarioFolder

if TYPE_CHECKING:  # imported by load() with --proxy alone: aiohttp's client and the recorder are not needed else
    from plantstub.proxy.forward import Forwarder


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Runtime(ByFields):
    """The spec and what is built from it, and the scenarios folder. Nothing here changes once loaded but
    the folder's last good load (`folder.current`), which a reload (--watch) swaps by reference."""

    settings: Settings
    spec: Spec
    router: Router
    served: Mapping[Operation, ServedOperation]
    # Checks rules at load, and templated replies once rendered, with the schemas compiled for the spec.
    contract: ScenarioContract
    folder: ScenarioFolder
    seed: int = 0  # of dynamic answers (--dynamic, `Prefer: dynamic=true`): the one given, else one chosen at load
    forwarder: Forwarder | None = None  # --proxy: what nothing else answers goes to the real service
    dynamic: Dynamic | None = None  # what every operation's dynamic answers share (None: a spec without operations)


def load(settings: Settings, spec: Spec | None = None) -> Runtime:
    """Load the spec (unless given) and the scenarios folder of `settings`.

    :raises ConfigError: a folder that does not exist, or scenarios that do not load (every error listed).
    """
    with collector_paused():
        spec = spec if spec is not None else load_spec(settings.spec, root=settings.spec_root, cache=settings.spec_cache)
        router = Router(spec)
        # Default answers are built now (serve() warns about the operations left without one), with every
        # schema compiled once for the spec; each request check is put together on the first request of its
        # operation (a tenth of a millisecond: its schemas are compiled already). A broken schema stopped load_spec.
        seed = settings.seed if settings.seed is not None else fresh_seed()
        served = serve(spec, dynamic=settings.dynamic, seed=seed)
    contract = ScenarioContract(spec, served, router)
    # Only the folder it was given: Stub() and create_app() never read ./scenarios on their own.
    folder = ScenarioFolder(settings.scenarios, spec, contract)
    if settings.scenarios is not None:
        if not settings.scenarios.is_dir():
            raise ConfigError(f"{settings.name_of('scenarios')}={str(settings.scenarios)!r}: no such folder")
        if settings.watch:
            folder.watch()
        loaded = folder.load()
        if not folder.install(loaded):
            raise ConfigError("scenarios cannot load:\n" + "\n".join(map(str, loaded.errors)))
    forwarder = None
    if settings.proxy is not None:
        from plantstub.proxy.forward import Forwarder

        forwarder = Forwarder(settings)
        forwarder.check()  # a --proxy-ca that cannot be read stops the start
    dynamic = next((s.dynamic for s in served.values()), None)  # serve() gives every operation the same one
    return Runtime(settings, spec, router, served, contract, folder, seed=seed, forwarder=forwarder, dynamic=dynamic)
