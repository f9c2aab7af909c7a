"""The proactive pipeline: open follow-up topics kept from the daily notes, every change verified
by code (never trusted from the model), and a short note of what to raise next session.

Modules: ``models`` (what the model may answer), ``reading`` (the topics file, the changed
notes, one call), ``update`` (the answer applied, with the ids code assigns, and verified),
``writing`` (the files and the cursor), ``cursor`` (which notes were read), ``review`` (the
review queue) and ``steps`` (the registered step).
"""
