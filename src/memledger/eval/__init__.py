"""Benchmarks and evaluation harnesses (``memledger bench ...``)."""
