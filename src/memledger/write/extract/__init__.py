"""Extractors: propose candidate claims from a source event (see ``memledger.ports.Extractor``)."""
