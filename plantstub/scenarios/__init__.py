"""What a test wants: scenario files, their check against the contract, rule selection, templated replies."""
