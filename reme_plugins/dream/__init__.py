"""The dream pipeline: daily notes consolidated into digest nodes, every edit applied and verified
by the core (never trusted from the model's own report).

Modules: ``units`` (the models), ``extract`` (changed notes -> units), ``integrate`` (one unit
-> one decision -> one write), ``apply`` and ``verify`` (the verb contracts), ``sources`` (links
and the ``## Sources`` section), ``checkpoint`` (what is done, what waits), ``steps`` (the
registered steps) and ``cli`` (``reme dream``).
"""
