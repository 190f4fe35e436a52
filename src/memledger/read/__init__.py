"""The read side: canonical views over the store."""
