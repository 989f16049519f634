"""A wait for one webhook delivery that times out says `1 delivery`, in process and on Stub.connect alike.

Found by a new user's trial: `stub.wait_for_deliveries(1, timeout=0.3)` failed with `expected 1 deliveries`.
"""

from __future__ import annotations

import pytest

from plantstub import CallAssertionError, Stub


def test_waiting_for_one_delivery_says_one_delivery():
    with Stub(spec="plant-store-full") as stub:
        for driven in (stub, Stub.connect(stub.url)):
            with pytest.raises(CallAssertionError) as waited:
                driven.wait_for_deliveries(1, timeout=0.1)
            assert str(waited.value) == "plantstub: expected 1 delivery within 0.1 s; got 0 (0 still being sent)."
