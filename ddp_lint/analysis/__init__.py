"""The analysis shared by every rule: scopes, model handles and their ordered events."""
