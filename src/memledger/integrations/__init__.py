"""Adapters that put memledger behind other frameworks' interfaces, each an extra:

* :mod:`memledger.integrations.langgraph`: a LangGraph long-term store
  (``langgraph.store.base.BaseStore``) backed by a memledger service
  (``pip install 'memledger[langgraph]'``).

Nothing is imported here: importing an adapter is what needs its extra.
"""

from __future__ import annotations

__all__: list[str] = []
