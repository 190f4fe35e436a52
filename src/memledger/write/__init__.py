"""The write side: the event commit and revocation, over a store's unit of work."""
