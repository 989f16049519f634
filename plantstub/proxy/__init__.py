"""The real service in the loop: forwarding what nothing else answers (--proxy), and judging its answers."""
