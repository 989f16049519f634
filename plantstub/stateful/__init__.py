"""`--stateful`: what a spec implies of resources, read once at load: the collections and items, each record's key,
the shape of each answer (wrappers, branches, pages). The store (plantstub/store/) holds records by it; scenario
files' `state:` is checked against it."""
